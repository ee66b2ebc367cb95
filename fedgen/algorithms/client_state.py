"""State that lives across rounds beside the model: per-user and server tensors by key.

SCAFFOLD's control variates, FedDyn's gradient states, MOON's previous local models and
the server optimisers' moments are dicts of tensors keyed like the model's state dict.
They are part of a run's state, saved in full checkpoints (`Algorithm.state_dict`) and
restored so a resumed run continues bit for bit.

Per-user state is `PerUser`: a user's entry is made (a copy of the initial template) the first
time the user is read, so memory and checkpoints grow with the users ever sampled, not with
all of them (10,000 users, 100 a round: a few hundred entries after a few rounds). A user never
sampled holds exactly the template, so creating it late changes no result. `PerUserRows` keeps
a small vector per user (FedGen's label counts) by the same rule, as rows of one tensor.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import torch
from torch import nn

from fedgen.federated import FederatedData

Tensors = dict[str, torch.Tensor]


class Federation(Protocol):
    """What the helpers below read of a `fedgen.algorithms.shared.Federation` (which keeps its
    users' local state in a `PerUser`, so it sits above this module)."""

    @property
    def work(self) -> nn.Module: ...

    @property
    def global_model(self) -> nn.Module: ...

    @property
    def data(self) -> FederatedData: ...


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


class PerUser:
    """Each user's entry, made from a private copy of `template` on first access.

    Indexing reads (creating when absent) and assigns like a list of all users' entries;
    `peek` and iteration read without creating (a user never made reads as the template);
    `state_dict` holds only the entries made (``{"made": {user: tensors}}``), and
    `load_state_dict` takes that or the former list of every user's entry.
    """

    def __init__(self, template: Tensors, num_users: int) -> None:
        self.template = cloned(template)  # the initial value, never changed afterwards
        self.num_users = num_users
        self.made: dict[int, Tensors] = {}

    def __len__(self) -> int:
        return self.num_users

    def __getitem__(self, user: int) -> Tensors:
        entry = self.made.get(user)
        if entry is None:
            if not 0 <= user < self.num_users:
                raise IndexError(f"user {user} not in 0..{self.num_users - 1}")
            entry = self.made[user] = cloned(self.template)
        return entry

    def peek(self, user: int) -> Tensors:
        """The user's entry to read, made or not (the template itself for a user never made:
        never write through it)."""
        entry = self.made.get(user)
        if entry is not None:
            return entry
        if not 0 <= user < self.num_users:
            raise IndexError(f"user {user} not in 0..{self.num_users - 1}")
        return self.template

    def __iter__(self) -> Iterator[Tensors]:
        """Every user's entry to read, in user order, making none (`peek`)."""
        return (self.made.get(u, self.template) for u in range(self.num_users))

    def __setitem__(self, user: int, tensors: Tensors) -> None:
        if not 0 <= user < self.num_users:
            raise IndexError(f"user {user} not in 0..{self.num_users - 1}")
        self.made[user] = tensors

    def state_dict(self) -> dict[str, dict[int, Tensors]]:
        """The entries made so far, copied, by user (sorted: the checkpoint is stable)."""
        return {"made": {u: cloned(self.made[u]) for u in sorted(self.made)}}

    def load_state_dict(self, state: dict[str, dict[int, Tensors]] | list[Tensors]) -> None:
        """Restore the made entries (a list: every user's entry, as older checkpoints hold)."""
        got = dict(enumerate(state)) if isinstance(state, list) else dict(state["made"])
        if isinstance(state, list) and len(state) != self.num_users:
            raise ValueError(
                f"checkpoint holds state of {len(state)} users, expected {self.num_users}"
            )
        made: dict[int, Tensors] = {}
        for user, src in got.items():
            if not 0 <= int(user) < self.num_users:
                raise ValueError(f"checkpoint holds state of user {user}, not in the federation")
            dst = cloned(self.template)
            restore_into(dst, src)
            made[int(user)] = dst
        self.made = made


class PerUserRows:
    """One row of `width` floats per user, made on a user's first write (FedGen's label
    counts): `PerUser`'s rule for a value too small to pay a tensor per user.

    The rows made are one (made, width) tensor in the order the users were first written, so
    `total` (their sum) reads one tensor; a user never written counts as a row of zeros.
    `state_dict` holds the users and their rows in that order, so a restored table sums in
    the same order as the one it was saved from; `load_state_dict` also takes the former
    (num_users, width) tensor of every user's row, keeping its non-zero rows.
    """

    def __init__(self, num_users: int, width: int, device: torch.device) -> None:
        self.num_users = num_users
        self.width = width
        self.device = device
        self.index: dict[int, int] = {}  # user -> its row
        self.rows = torch.zeros(0, width, device=device)  # capacity >= len(index)

    def __len__(self) -> int:
        return len(self.index)

    def __setitem__(self, user: int, row: torch.Tensor) -> None:
        if not 0 <= user < self.num_users:
            raise IndexError(f"user {user} not in 0..{self.num_users - 1}")
        at = self.index.get(user)
        if at is None:
            at = len(self.index)
            if at == self.rows.shape[0]:  # grow by doubling: amortised copies
                grown = torch.zeros(max(8, 2 * at), self.width, device=self.device)
                grown[:at] = self.rows
                self.rows = grown
            self.index[user] = at
        self.rows[at] = row

    def __getitem__(self, user: int) -> torch.Tensor:
        """The user's row (zeros when never written; a copy either way)."""
        at = self.index.get(user)
        if at is None:
            return torch.zeros(self.width, device=self.device)
        return self.rows[at].clone()

    def total(self) -> torch.Tensor:
        """The sum of every user's row."""
        return self.rows[: len(self.index)].sum(0)

    def state_dict(self) -> dict[str, torch.Tensor]:
        users = sorted(self.index, key=self.index.__getitem__)
        return {
            "users": torch.tensor(users, dtype=torch.int64),
            "rows": self.rows[: len(users)].detach().clone(),
        }

    def load_state_dict(self, state: dict[str, torch.Tensor] | torch.Tensor) -> None:
        if isinstance(state, torch.Tensor):  # every user's row, as older checkpoints hold
            if tuple(state.shape) != (self.num_users, self.width):
                raise ValueError(
                    f"checkpoint holds rows of shape {tuple(state.shape)}, "
                    f"expected ({self.num_users}, {self.width})"
                )
            users = [int(u) for u in torch.nonzero(state.abs().sum(1) > 0).flatten().tolist()]
            rows = state[users] if users else state[:0]
        else:
            users = [int(u) for u in state["users"].tolist()]
            rows = state["rows"]
            if tuple(rows.shape) != (len(users), self.width):
                raise ValueError(
                    f"checkpoint holds rows of shape {tuple(rows.shape)} for {len(users)} "
                    f"users, expected ({len(users)}, {self.width})"
                )
        if any(not 0 <= u < self.num_users for u in users) or len(set(users)) != len(users):
            raise ValueError("checkpoint holds rows of users not in the federation")
        self.index = {u: i for i, u in enumerate(users)}
        self.rows = rows.detach().to(self.device, torch.float32).clone()


def per_user(fed: Federation, template: Tensors) -> PerUser:
    """Every user's entry of the federation, each a copy of `template` until first changed
    (made when first read: `PerUser`)."""
    return PerUser(template, len(fed.data.users))


def restore_into(dst: Tensors, src: Tensors) -> None:
    """Copy a checkpoint's tensors into the live ones (same keys, device kept)."""
    if set(dst) != set(src):
        raise ValueError(f"checkpoint state has keys {sorted(src)}, expected {sorted(dst)}")
    with torch.no_grad():
        for k, v in dst.items():
            v.copy_(src[k])


def restore_all(dst: PerUser, src: dict[str, dict[int, Tensors]] | list[Tensors]) -> None:
    """Restore every user's entry from a checkpoint (`PerUser.load_state_dict`)."""
    dst.load_state_dict(src)


def nbytes(tensors: Tensors) -> int:
    """Bytes of the tensors' payload (what sending them costs)."""
    return sum(t.numel() * t.element_size() for t in tensors.values())
