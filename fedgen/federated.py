"""The federated data set on the run's device: tensors plus each user's indices.

The whole data set lives as tensors on the device; a user is a pair of index
tensors into it, so a batch is one `index_select`, never a collation.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from fedgen.augment import Augmenter
from fedgen.data.common import DatasetTensors
from fedgen.data.partition import Partition


@dataclass(frozen=True)
class UserData:
    """One user's slice of the data set."""

    index: int
    train_idx: torch.Tensor  # (n_train,) int64 on device
    test_idx: torch.Tensor  # (n_test,) int64 on device
    label_counts: torch.Tensor  # (num_classes,) float32 on device, full training labels

    @property
    def num_train(self) -> int:
        return int(self.train_idx.shape[0])

    @property
    def num_test(self) -> int:
        return int(self.test_idx.shape[0])


@dataclass(frozen=True)
class FederatedData:
    """Train/test tensors on the device and the users that index them."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    users: list[UserData]
    num_classes: int
    held_out_idx: torch.Tensor  # training samples no user holds (FedDF's default proxy)
    # The training batches' transform (`data.augment`; the runner sets it), None: as stored.
    augment: Augmenter | None = None
    # Every user's validation samples (`partition.val_fraction`), indices into the training
    # set, user after user; empty: no validation data. No user trains on them.
    val_idx: torch.Tensor = torch.zeros(0, dtype=torch.int64)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        c, h, w = self.train_x.shape[1:]
        return int(c), int(h), int(w)

    @property
    def available_labels(self) -> torch.Tensor:
        """Labels present in the union of all users' training data (sorted)."""
        total = torch.stack([u.label_counts for u in self.users]).sum(0)
        return torch.nonzero(total > 0).flatten()

    @cached_property
    def pooled_test(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The union of the users' test indices (sorted) and each user's positions in it.

        The per-user protocol only ever looks at these samples, so evaluation runs
        on them alone instead of the whole test set.
        """
        union = torch.unique(torch.cat([u.test_idx for u in self.users]))
        return union, [torch.searchsorted(union, u.test_idx) for u in self.users]

    @cached_property
    def user_test(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Each user's test images and labels, gathered once (per-user evaluation reads them every round)."""
        return [
            (self.test_x.index_select(0, u.test_idx), self.test_y.index_select(0, u.test_idx))
            for u in self.users
        ]

    @classmethod
    def build(cls, ds: DatasetTensors, part: Partition, device: torch.device) -> FederatedData:
        train_y_np = ds.train_y.numpy()
        users = []
        for k, (tr, te) in enumerate(zip(part.train_indices, part.test_indices, strict=True)):
            counts = np.bincount(train_y_np[tr], minlength=ds.num_classes).astype(np.float32)
            users.append(
                UserData(
                    index=k,
                    train_idx=torch.as_tensor(tr, dtype=torch.int64).to(device),
                    test_idx=torch.as_tensor(te, dtype=torch.int64).to(device),
                    label_counts=torch.from_numpy(counts).to(device),
                )
            )
        used = np.zeros(len(train_y_np), dtype=bool)
        for tr in [*part.train_indices, *part.val_indices]:
            used[tr] = True  # validation samples are no proxy data either
        val = np.concatenate(part.val_indices) if part.val_indices else np.zeros(0, np.int64)
        return cls(
            train_x=ds.train_x.to(device),
            train_y=ds.train_y.to(device),
            test_x=ds.test_x.to(device),
            test_y=ds.test_y.to(device),
            users=users,
            num_classes=ds.num_classes,
            held_out_idx=torch.from_numpy(np.nonzero(~used)[0]).to(device),
            val_idx=torch.as_tensor(val, dtype=torch.int64).to(device),
        )
