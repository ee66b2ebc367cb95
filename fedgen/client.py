"""Client-side building blocks: per-user batch streams and the local SGD loop.

Batches are drawn by index from device-resident tensors (no DataLoader
collation). A user's stream mirrors the official train loader (shuffle each
epoch, drop the last partial batch, the iterator persists across rounds), except
that a user with fewer samples than a batch trains on all it has instead of
crashing (reference §7, issue #25).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn


class BatchStream:
    """An endless, seeded stream of mini-batches over one user's sample positions."""

    def __init__(self, num_samples: int, seed_seq: np.random.SeedSequence) -> None:
        if num_samples < 1:
            raise ValueError("a user needs at least one training sample")
        self.n = num_samples
        self.rng = np.random.default_rng(seed_seq)
        self.perm = self.rng.permutation(self.n)
        self.cursor = 0

    def take(self, steps: int, batch_size: int) -> np.ndarray:
        """(steps, b) positions into the user's samples, b = min(batch_size, n)."""
        b = min(batch_size, self.n)
        out = np.empty((steps, b), dtype=np.int64)
        for s in range(steps):
            if self.cursor + b > self.n:
                self.perm = self.rng.permutation(self.n)
                self.cursor = 0
            out[s] = self.perm[self.cursor : self.cursor + b]
            self.cursor += b
        return out

    def state_dict(self) -> dict[str, Any]:
        return {
            "rng": self.rng.bit_generator.state,
            "perm": torch.from_numpy(self.perm.copy()),
            "cursor": self.cursor,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.perm = state["perm"].cpu().numpy().copy()
        self.cursor = int(state["cursor"])


LossFn = Callable[[nn.Module, torch.Tensor, torch.Tensor, int], torch.Tensor]
GradHook = Callable[[list[torch.Tensor]], None]


def cross_entropy_loss(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    step: int,  # noqa: ARG001
) -> torch.Tensor:
    """The plain supervised objective."""
    return nn.functional.cross_entropy(model(x), y)


def local_sgd(
    model: nn.Module,
    x_all: torch.Tensor,
    y_all: torch.Tensor,
    batches: torch.Tensor,
    lr: float,
    loss_fn: LossFn = cross_entropy_loss,
    grad_hook: GradHook | None = None,
    augment: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Run len(batches) plain SGD steps; returns the mean loss as a 0-d tensor (no host sync).

    `batches` is a (steps, b) tensor of absolute sample indices on the data's device.
    `grad_hook` may edit the gradients in place before the step (FedProx); `augment`
    transforms each batch's inputs (`data.augment`: `fedgen.augment.Augmenter`).
    """
    model.train()
    trainable: list[torch.Tensor] = [p for p in model.parameters() if p.requires_grad]
    total = torch.zeros((), device=x_all.device)
    for step in range(batches.shape[0]):
        idx = batches[step]
        x, y = x_all.index_select(0, idx), y_all.index_select(0, idx)
        if augment is not None:
            x = augment(x)
        loss = loss_fn(model, x, y, step)
        grads = torch.autograd.grad(loss, trainable)
        grads_l = list(grads)
        if grad_hook is not None:
            grad_hook(grads_l)
        with torch.no_grad():
            torch._foreach_add_(trainable, grads_l, alpha=-lr)
            total += loss.detach()
    return total / batches.shape[0]
