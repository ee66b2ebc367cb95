"""State that lives across rounds beside the model: per-user and server tensors by key.

SCAFFOLD's control variates, FedDyn's gradient states, MOON's previous local models and
the server optimisers' moments are dicts of tensors keyed like the model's state dict.
They are part of a run's state: every user's entry exists from the start (also users
never sampled), is saved in full checkpoints (`Algorithm.state_dict`) and is restored
in place so a resumed run continues bit for bit.
"""

from __future__ import annotations

import torch

from fedgen.algorithms.shared import Federation

Tensors = dict[str, torch.Tensor]


def trained_keys(fed: Federation) -> list[str]:
    """The working model's trainable parameters in `local_sgd`'s order (its gradient list)."""
    return [k for k, p in fed.work.named_parameters() if p.requires_grad]


def zeros_for(fed: Federation, keys: list[str]) -> Tensors:
    """Zeros shaped like the global model's `keys`."""
    state = fed.global_model.state_dict()
    return {k: torch.zeros_like(state[k]) for k in keys}


def cloned(tensors: Tensors) -> Tensors:
    """A detached copy (what a checkpoint stores, or a fresh per-user entry)."""
    return {k: v.detach().clone() for k, v in tensors.items()}


def per_user(fed: Federation, template: Tensors) -> list[Tensors]:
    """One copy of `template` for every user of the federation."""
    return [cloned(template) for _ in fed.data.users]


def restore_into(dst: Tensors, src: Tensors) -> None:
    """Copy a checkpoint's tensors into the live ones (same keys, device kept)."""
    if set(dst) != set(src):
        raise ValueError(f"checkpoint state has keys {sorted(src)}, expected {sorted(dst)}")
    with torch.no_grad():
        for k, v in dst.items():
            v.copy_(src[k])


def restore_all(dst: list[Tensors], src: list[Tensors]) -> None:
    """`restore_into` for every user's entry."""
    if len(dst) != len(src):
        raise ValueError(f"checkpoint holds state of {len(src)} users, expected {len(dst)}")
    for d, s in zip(dst, src, strict=True):
        restore_into(d, s)


def nbytes(tensors: Tensors) -> int:
    """Bytes of the tensors' payload (what sending them costs)."""
    return sum(t.numel() * t.element_size() for t in tensors.values())
