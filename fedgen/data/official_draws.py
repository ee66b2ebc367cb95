"""The official split scripts' exact draws (`partition.draws: official`, reference §2.1-2.2).

The official MNIST and EMNIST split scripts seed Python's global `random` and NumPy's legacy
global generator with 42 when they start and draw from them in a fixed order. This module
makes the same draws, in the same order, from private generators seeded the same way
(`random.Random(seed)` and `np.random.RandomState(seed)` give the same streams as
`random.seed(seed)` and `np.random.seed(seed)`), so that with ``seed=42`` every user gets the
official script's samples in the official script's storage order:

1. the class list ``[0, ..., C-1]`` is shuffled once by Python's `shuffle`;
2. per attempt (re-drawn with the generators continuing until every user holds `min_samples`),
   for each class in that order: NumPy shuffles the Python list ``[0, ..., n_l - 1]``, keeps
   its first ``k`` entries, draws ``p ~ Dir(alpha * 1_U)``, zeroes ``p_u`` for users whose
   running total is not below the (float) cap ``ratio * N / U``, renormalises, and cuts the
   ``k`` entries at ``int(cumsum(p) * k)`` (last cut dropped); piece ``u`` goes to user ``u``;
3. a user's samples are stored class by class in the shuffled class order.

Index ``i`` of class ``l`` is the ``i``-th sample of class ``l`` in the dataset file's order; the
returned indices are positions in the file. The per-user test split (§2.1 step 5) draws nothing
and is `fedgen.data.partition.per_user_test_split`; it visits a user's labels in the order the
script's Python `set` of them iterates, `official_label_order`.

Another seed than 42 seeds both generators with it: the same procedure and draw order, other
draws.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any, Literal, TypedDict, Unpack

import numpy as np

__all__ = [
    "OFFICIAL_SEED",
    "SplitArgs",
    "Variant",
    "official_label_order",
    "official_train_split",
]

IntArray = np.ndarray[Any, np.dtype[np.int64]]

#: The seed both official scripts set at import.
OFFICIAL_SEED = 42

#: ``mnist``: ``data/Mnist/generate_niid_dirichlet.py`` (used for MNIST, Fashion-MNIST and the
#: synthetic set); ``emnist``: ``data/EMnist/generate_niid_dirichlet.py``, whose per-class cap
#: is not wrapped in ``int()`` (§2.2).
Variant = Literal["mnist", "emnist"]


class SplitArgs(TypedDict):
    """The parameters of a per-class Dirichlet split, whichever draws make it.

    Declared once for `official_train_split` and both Dirichlet splits of
    `fedgen.data.partition`, which take them as keywords (`**args: Unpack[SplitArgs]`).

    Attributes
    ----------
    num_users
        Number of users U.
    num_classes
        Number of classes; labels must lie in ``[0, num_classes)``.
    alpha
        Dirichlet concentration (p ~ Dir(alpha * 1_U) per class).
    sampling_ratio
        Fraction of each class used; the per-user cap is ``ratio * n_train / U``.
    min_samples
        The whole split is re-drawn until every user holds at least this many samples.
    seed
        Seeds the draws' generator(s).
    max_redraws
        Number of draws before giving up.
    """

    num_users: int
    num_classes: int
    alpha: float
    sampling_ratio: float
    min_samples: int
    seed: int
    max_redraws: int


class OfficialSplitError(ValueError):
    """Parameters with which the official script itself cannot produce a split."""


def official_label_order(labels_in_storage_order: Iterable[int]) -> list[int]:
    """The order in which the official script visits a user's labels in its test split.

    The script collects a user's labels in a Python `set`, adding them in the order the user's
    training samples are stored (class by class, in the shuffled class order, §2.1 step 4), and
    takes the user's test samples label by label in ``list(label_set)`` order (step 5). That is
    CPython's set iteration order, which is slot order in the set's hash table, not ascending
    and not insertion order:

    * ``hash(i) == i`` for a small non-negative int, and label ``i`` first tries slot
      ``i & mask``;
    * a set starts with 8 slots (mask 7) and, once 5 slots are filled, is rebuilt with 32
      (then 128, ... as it fills further), so a set of 5 or more labels below 32 iterates in
      ascending order;
    * in the 8-slot table, labels 8 and 9 first try slots 0 and 1, ahead of the labels 2-7:
      {3, 8} iterates as 8, 3;
    * a label whose slot is taken probes further: CPython's linear probes (LINEAR_PROBES = 9
      slots) only run where they fit inside the table, which they never do in 8 slots, so the
      next slot is ``(5 * i + 1 + perturb) & mask`` with ``perturb`` the hash shifted right by
      5 each step (0 for labels below 32): 8, 9, 4, 0 added in that order put 0, whose slot 0
      holds 8, in slot 1 (taken by 9), then slot 6, so the set iterates as 8, 9, 4, 0.

    Rather than re-implement that table, this builds a real `set` the same way and iterates it:
    exactly what the script does, on CPython (tests/fedgen/test_official_split.py checks the
    interpreter against a model of the table above). Re-adding a label changes nothing, so
    passing every stored sample's label or each class once gives the same order.
    """
    label_set: set[int] = set()
    for label in labels_in_storage_order:
        label_set.add(int(label))
    return list(label_set)


def _kept(n_l: int, sampling_ratio: float, max_per_user: float, variant: Variant) -> int:
    """How many of class l's shuffled indices are kept (step 3b)."""
    per_class = int(sampling_ratio * n_l)
    if variant == "emnist" and not per_class < max_per_user:
        # min(cap, per_class) is then the float cap (min keeps the first of equals), and the
        # script slices a Python list with it, which raises TypeError there.
        raise OfficialSplitError(
            f"the official EMNIST script cannot split this: its per-user cap "
            f"sampling_ratio x n_train / num_users = {max_per_user:g} is not above "
            f"int(sampling_ratio x class size) = {per_class} and is not wrapped in int(); "
            "use fewer users or partition.draws: fedgen"
        )
    return int(min(max_per_user, per_class))


def _one_attempt(
    by_class: list[IntArray],
    class_order: list[int],
    num_users: int,
    alpha: float,
    sampling_ratio: float,
    max_per_user: float,
    variant: Variant,
    np_rng: np.random.RandomState,
) -> list[IntArray]:
    totals = [0] * num_users
    pieces: list[list[IntArray]] = [[] for _ in range(num_users)]
    for label in class_order:
        members = by_class[label]
        positions = list(range(members.size))
        np_rng.shuffle(positions)  # a Python list, shuffled in place, as the script does
        if sampling_ratio < 1:
            positions = positions[: _kept(members.size, sampling_ratio, max_per_user, variant)]
        p_raw = np_rng.dirichlet([alpha] * num_users)
        # Same float operations as the script: multiply by the open/closed flag, then divide.
        p = np.array([pu * (n < max_per_user) for pu, n in zip(p_raw, totals, strict=True)])
        if not p.sum() > 0.0:
            # All mass on capped users to float precision: the script gets NaN cut points
            # (platform-dependent int cast). Never seen in practice; split evenly over the users
            # still open instead, which draws nothing, so later draws stay in step.
            p = (
                np.array([float(n < max_per_user) for n in totals])
                if min(totals) < max_per_user
                else np.ones(num_users)
            )
        p = p / p.sum()
        kept = np.asarray(positions, dtype=np.int64)
        cuts = (np.cumsum(p) * kept.size).astype(np.int64)[:-1]
        for u, piece in enumerate(np.split(kept, cuts)):
            if piece.size:
                pieces[u].append(members[piece])
                totals[u] += int(piece.size)
    return [
        np.concatenate(p).astype(np.int64) if p else np.zeros(0, dtype=np.int64) for p in pieces
    ]


def official_train_split(
    train_y: IntArray, *, variant: Variant, **args: Unpack[SplitArgs]
) -> tuple[list[IntArray], int]:
    """The official script's per-user training indices (into the file) and the attempts used.

    Returns ``(train_indices, attempts)``; if no attempt within `max_redraws` gives every user
    `min_samples`, the last attempt is returned and the caller reports the failure.

    Raises
    ------
    OfficialSplitError
        If the EMNIST variant's un-int-wrapped cap would make the script itself fail.
    """
    num_users, num_classes = args["num_users"], args["num_classes"]
    py_rng = random.Random(args["seed"])
    np_rng = np.random.RandomState(args["seed"])
    by_class = [np.flatnonzero(train_y == c).astype(np.int64) for c in range(num_classes)]
    class_order = list(range(num_classes))
    py_rng.shuffle(class_order)
    max_per_user = args["sampling_ratio"] * train_y.size / num_users
    train_idx: list[IntArray] = []
    for attempt in range(1, args["max_redraws"] + 1):
        train_idx = _one_attempt(
            by_class,
            class_order,
            num_users,
            args["alpha"],
            args["sampling_ratio"],
            max_per_user,
            variant,
            np_rng,
        )
        if min(i.size for i in train_idx) >= args["min_samples"]:
            return train_idx, attempt
    return train_idx, args["max_redraws"]
