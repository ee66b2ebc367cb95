"""Evaluation: per-sample correctness and loss, reduced per user and globally.

A shared model is run once over the test set and each user's accuracy is read
off by index; a model that differs per user (local BatchNorm statistics,
personalised extractors, ensembles) is run per user on that user's split.
Protocols (reference §5.1, §6 #15): `per_user` pools the users' label-matched
splits (duplicates included, as the official glob_acc does); `global` uses the
whole test set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from fedgen.federated import FederatedData
from fedgen.sizes import FULL_USER_ROWS

Logits = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Evaluation:
    """Per-user and global results of one evaluation (tensors on the host)."""

    user_correct: torch.Tensor  # (U,) float
    user_loss: torch.Tensor  # (U,) summed CE
    user_count: torch.Tensor  # (U,)
    global_acc: float
    global_loss: float

    @property
    def user_acc(self) -> torch.Tensor:
        return self.user_correct / self.user_count.clamp(min=1)


@torch.no_grad()
def per_sample(
    logits_fn: Logits, x: torch.Tensor, y: torch.Tensor, batch: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(correct, loss) per sample, computed in chunks of `batch` under no_grad."""
    correct, loss = [], []
    for i in range(0, x.shape[0], batch):
        logits = logits_fn(x[i : i + batch])
        yy = y[i : i + batch]
        correct.append((logits.argmax(1) == yy).float())
        loss.append(nn.functional.cross_entropy(logits.float(), yy, reduction="none"))
    if not correct:
        return torch.zeros(0, device=x.device), torch.zeros(0, device=x.device)
    return torch.cat(correct), torch.cat(loss)


def _sums_by_user(values: torch.Tensor, positions: list[torch.Tensor]) -> torch.Tensor:
    """Each user's sum of `values` at its positions, on the host, in one scatter (users above
    `FULL_USER_ROWS`: 10,000 small sums took seconds; the last bits may differ from summing
    each user's values alone, which the runs up to 1,000 users keep doing)."""
    sizes = torch.tensor([p.numel() for p in positions], device=values.device)
    owner = torch.repeat_interleave(torch.arange(len(positions), device=values.device), sizes)
    picked = values.index_select(0, torch.cat(positions)) if positions else values[:0]
    out = torch.zeros(len(positions), dtype=values.dtype, device=values.device)
    return out.index_add_(0, owner, picked).cpu()


def evaluate_shared(
    logits_fn: Logits, data: FederatedData, protocol: str, batch: int
) -> Evaluation:
    """One model for everybody: one pass over the samples the protocol needs."""
    if protocol == "global":
        correct, loss = per_sample(logits_fn, data.test_x, data.test_y, batch)
        positions = [u.test_idx for u in data.users]
    else:
        union, positions = data.pooled_test
        correct, loss = per_sample(
            logits_fn, data.test_x.index_select(0, union), data.test_y.index_select(0, union), batch
        )
    if len(positions) > FULL_USER_ROWS:  # cross-device: one scatter, not a sum per user
        uc, ul = _sums_by_user(correct, positions), _sums_by_user(loss, positions)
    else:
        uc = torch.stack([correct.index_select(0, p).sum() for p in positions]).cpu()
        ul = torch.stack([loss.index_select(0, p).sum() for p in positions]).cpu()
    n = torch.tensor([u.num_test for u in data.users], dtype=torch.float32)
    if protocol == "global":
        return Evaluation(uc, ul, n, float(correct.mean()), float(loss.mean()))
    total = float(n.sum().clamp(min=1))
    return Evaluation(uc, ul, n, float(uc.sum()) / total, float(ul.sum()) / total)


def evaluate_per_user(
    logits_for_user: Callable[[int], Logits],
    data: FederatedData,
    protocol: str,
    batch: int,
    global_logits: Logits | None = None,
    users: list[int] | None = None,
) -> Evaluation:
    """A model per user, each on its own split; `global` protocol uses `global_logits` if given.

    Without `global_logits` the global figure pools the users' splits whatever the protocol
    (personalised models have no single model to run on the whole test set). `users`: only
    these users' models are run (cross-device rounds: the round's trained users); the others
    count no samples (`user_count` 0) and the pooled figure covers the users run.
    """
    ucs, uls = [], []
    run = None if users is None else set(users)
    zero = torch.zeros((), device=data.test_x.device)
    for u, (x, y) in zip(data.users, data.user_test, strict=True):
        if run is not None and u.index not in run:
            ucs.append(zero)
            uls.append(zero)
            continue
        c, l_ = per_sample(logits_for_user(u.index), x, y, batch)
        ucs.append(c.sum())
        uls.append(l_.sum())
    uc, ul = torch.stack(ucs).cpu(), torch.stack(uls).cpu()
    n = torch.tensor(
        [u.num_test if run is None or u.index in run else 0 for u in data.users],
        dtype=torch.float32,
    )
    if protocol == "global" and global_logits is not None:
        c, l_ = per_sample(global_logits, data.test_x, data.test_y, batch)
        return Evaluation(uc, ul, n, float(c.mean()), float(l_.mean()))
    total = float(n.sum().clamp(min=1))
    return Evaluation(uc, ul, n, float(uc.sum()) / total, float(ul.sum()) / total)


def evaluate_validation(logits_fn: Logits, data: FederatedData, batch: int) -> tuple[float, float]:
    """Accuracy and mean loss of one model on every user's validation samples, pooled.

    The samples are the training set's (`FederatedData.val_idx`, `partition.val_fraction`);
    (NaN, NaN) when there are none.
    """
    if data.val_idx.numel() == 0:
        return float("nan"), float("nan")
    correct, loss = per_sample(
        logits_fn,
        data.train_x.index_select(0, data.val_idx),
        data.train_y.index_select(0, data.val_idx),
        batch,
    )
    return float(correct.mean()), float(loss.mean())
