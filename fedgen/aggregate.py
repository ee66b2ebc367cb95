"""Aggregation: pure functions on state dicts (no nn.Module state).

Paper: McMahan et al. 2017, arXiv.org/abs/1602.05629 (FedAvg). The FedGen paper's
Alg. 1 averages uniformly; the official code weights by sample count (§6 #6).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

StateDict = dict[str, torch.Tensor]


def aggregation_weights(num_samples: Sequence[int], mode: str) -> list[float]:
    """Normalised weights: proportional to sample counts ('samples') or equal ('uniform')."""
    if not num_samples:
        raise ValueError("cannot aggregate zero uploads")
    if mode == "uniform":
        return [1.0 / len(num_samples)] * len(num_samples)
    if mode == "samples":
        total = float(sum(num_samples))
        return [n / total for n in num_samples]
    raise ValueError(f"unknown aggregation {mode!r}; expected 'samples' or 'uniform'")


def weighted_average(states: Sequence[StateDict], weights: Sequence[float]) -> StateDict:
    """sum_k w_k * state_k for floating tensors; integer tensors (BN counters) take the max."""
    if len(states) != len(weights):
        raise ValueError(f"{len(states)} states but {len(weights)} weights")
    out: StateDict = {}
    for key in states[0]:
        first = states[0][key]
        if first.is_floating_point():
            stacked = torch.stack([s[key] for s in states])
            w = torch.tensor(weights, dtype=first.dtype, device=first.device)
            out[key] = torch.tensordot(w, stacked, dims=1)
        else:
            out[key] = torch.stack([s[key] for s in states]).amax(dim=0)
    return out


def state_nbytes(state: StateDict) -> int:
    """Bytes a state dict occupies on the wire (raw tensor payload)."""
    return sum(t.numel() * t.element_size() for t in state.values())
