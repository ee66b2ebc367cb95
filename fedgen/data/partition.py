"""Splitting a dataset over federated users (reference §2.1-2.3).

Three splits are provided:

* `official_partition` - the official FedGen MNIST/EMNIST split with the official scripts'
  exact draws (`partition.draws: official`, `fedgen.data.official_draws`): with data_seed 42
  every user gets the official script's samples, in its order.
* `dirichlet_partition` - the same procedure (a per-class Dirichlet draw with a per-user
  sample cap, re-drawn until every user holds `min_samples`) with every random choice from
  ONE `numpy.random.default_rng(seed)` (`partition.draws: fedgen`): same distribution, other
  draws.
* `group_partition` - a natural split where every sample already carries a user id
  (CelebA: groups of celebrities).

Both Dirichlet splits use the official label-matched per-user test split: the official draws
visit a user's labels in the official script's (CPython set) order, fedgen's draws in ascending
order. All indices are positions in the dataset files, in their stored order.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Unpack

import numpy as np

from fedgen.data.official_draws import (
    OfficialSplitError,
    SplitArgs,
    Variant,
    official_label_order,
    official_train_split,
)
from fedgen.data.registry import BUILTINS

if TYPE_CHECKING:
    from fedgen.data.common import DatasetTensors
    from fedgen.spec import PartitionSpec

__all__ = [
    "Partition",
    "PartitionError",
    "build_partition",
    "carve_validation",
    "dirichlet_partition",
    "group_partition",
    "official_partition",
    "per_user_test_split",
]

IntArray = np.ndarray[Any, np.dtype[np.int64]]


class PartitionError(ValueError):
    """A split that cannot be built with the requested parameters."""


@dataclass(frozen=True)
class Partition:
    """Per-user index lists into a dataset's train and test sets."""

    train_indices: list[IntArray]
    """One int64 array per user, indices into the training set, in assignment order."""
    test_indices: list[IntArray]
    """One int64 array per user, indices into the test set (label-matched per-user split)."""
    num_classes: int
    """Number of classes of the dataset."""
    val_indices: list[IntArray] = field(default_factory=list)
    """One int64 array per user, indices into the training set held out as the user's
    validation data (`carve_validation`; disjoint from every user's train indices); empty
    list: no validation data (`partition.val_fraction` 0)."""

    @property
    def num_users(self) -> int:
        """Number of users."""
        return len(self.train_indices)

    def fingerprint(self) -> str:
        """Return a sha256 (first 16 hex digits) over every user's train and test indices.

        Each user's train indices, then each user's test indices, then (only when there is
        validation data, so a split without it keeps its fingerprint) each user's validation
        indices, are hashed in order, every array prefixed by its length, as little-endian int64.
        """
        h = hashlib.sha256()
        h.update(f"users={self.num_users};classes={self.num_classes}".encode())
        parts = [self.train_indices, self.test_indices]
        if self.val_indices:
            h.update(b";val")
            parts.append(self.val_indices)
        for part in parts:
            for idx in part:
                arr = np.ascontiguousarray(idx, dtype="<i8")
                h.update(np.int64(arr.size).astype("<i8").tobytes())
                h.update(arr.tobytes())
        return h.hexdigest()[:16]

    def label_histogram(self, train_y: np.ndarray[Any, Any]) -> IntArray:
        """Return the users x classes matrix of training label counts.

        Parameters
        ----------
        train_y
            Labels of the whole training set (numpy array or anything convertible).
        """
        y = np.asarray(train_y, dtype=np.int64)
        out = np.zeros((self.num_users, self.num_classes), dtype=np.int64)
        for u, idx in enumerate(self.train_indices):
            out[u] = np.bincount(y[idx], minlength=self.num_classes)[: self.num_classes]
        return out

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-friendly summary: sizes per user, totals and the fingerprint."""
        train_sizes = [int(i.size) for i in self.train_indices]
        test_sizes = [int(i.size) for i in self.test_indices]
        extra: dict[str, Any] = {}
        if self.val_indices:
            val_sizes = [int(i.size) for i in self.val_indices]
            extra = {"val_sizes": val_sizes, "total_val": sum(val_sizes)}
        return {
            "num_users": self.num_users,
            "num_classes": self.num_classes,
            "train_sizes": train_sizes,
            "test_sizes": test_sizes,
            "total_train": sum(train_sizes),
            "total_test": sum(test_sizes),
            **extra,
            "fingerprint": self.fingerprint(),
        }


def _draw_train_split(
    train_y: IntArray,
    classes: IntArray,
    num_users: int,
    alpha: float,
    sampling_ratio: float,
    rng: np.random.Generator,
) -> list[IntArray]:
    """One draw of the official per-class Dirichlet split (reference §2.1, steps 1-5)."""
    max_per_user = sampling_ratio * train_y.size / num_users
    order = rng.permutation(classes)
    pieces: list[list[IntArray]] = [[] for _ in range(num_users)]
    totals = np.zeros(num_users, dtype=np.int64)
    for label in order:
        idx = np.flatnonzero(train_y == label).astype(np.int64)
        idx = idx[rng.permutation(idx.size)]
        if sampling_ratio < 1:
            idx = idx[: int(min(max_per_user, int(sampling_ratio * idx.size)))]
        p_raw = rng.dirichlet(np.full(num_users, alpha))
        open_users = totals < max_per_user
        p = np.where(open_users, p_raw, 0.0)
        if not p.sum() > 0.0:
            # The draw put all its mass (to float precision) on capped users, which the
            # official code turns into NaN cut points. Split evenly over the users still
            # below the cap instead; if every user is capped (impossible by construction,
            # the caps add up to the data kept), use the draw as it is.
            p = open_users.astype(np.float64) if open_users.any() else p_raw
            if not p.sum() > 0.0:
                p = np.ones(num_users)
        p = p / p.sum()
        cuts = (np.cumsum(p) * idx.size).astype(np.int64)[:-1]
        for u, piece in enumerate(np.split(idx, cuts)):
            pieces[u].append(piece)
            totals[u] += piece.size
    return [
        np.concatenate(p).astype(np.int64) if p else np.zeros(0, dtype=np.int64) for p in pieces
    ]


def per_user_test_split(
    train_y: IntArray,
    test_y: IntArray,
    train_indices: list[IntArray],
    num_classes: int,
    *,
    label_order: Literal["ascending", "official"] = "ascending",
) -> list[IntArray]:
    """Return the official label-matched per-user test split (``unknown_test=0``).

    For each user in order and each label present in its training data, the user gets
    ``floor(n_test_label / num_users)`` consecutive test samples of that label, in the test
    set's original order, from a per-label running pointer shared by all users; if the
    pointer would run past the label's test count it wraps to 0. Labels with fewer test
    samples than users therefore contribute nothing; the remainder of each label is dropped.

    `label_order` is the order a user's labels are visited in, which orders its test samples
    (not which samples it gets: every user takes its labels' slices in turn, users in order):
    ``official`` is the official script's, the iteration order of a Python `set` of the
    labels built in the user's training storage order (`official_label_order`, §2.1 step 5;
    not ascending for some users with labels 8 or above); ``ascending`` sorts them (fedgen's
    draws: not the official split anyway, and kept as they were).
    """
    num_users = len(train_indices)
    by_label = [np.flatnonzero(test_y == c).astype(np.int64) for c in range(num_classes)]
    pointer = [0] * num_classes
    out: list[IntArray] = []
    for idx in train_indices:
        if label_order == "official":
            present = official_label_order(train_y[idx].tolist())
        else:
            present = np.unique(train_y[idx]).tolist()
        chunks: list[IntArray] = []
        for label in present:
            pool = by_label[label]
            k = pool.size // num_users
            if k == 0:
                continue
            if pointer[label] + k > pool.size:
                pointer[label] = 0
            chunks.append(pool[pointer[label] : pointer[label] + k])
            pointer[label] += k
        out.append(np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64))
    return out


def dirichlet_partition(
    train_y: np.ndarray[Any, Any], test_y: np.ndarray[Any, Any], **args: Unpack[SplitArgs]
) -> Partition:
    """Split the training set with the official per-class Dirichlet procedure.

    Parameters
    ----------
    train_y, test_y
        Integer labels of the training and test sets.
    **args
        The split's parameters, `SplitArgs` (keyword-only, all required); `seed` seeds the
        single numpy Generator used for every draw.

    Returns
    -------
    Partition
        Train indices in assignment order and the official per-user test split.

    Raises
    ------
    PartitionError
        If the parameters are invalid or no draw satisfies `min_samples`.
    """
    ty, vy = _checked_labels(train_y, test_y, args)
    num_users, num_classes = args["num_users"], args["num_classes"]
    classes = np.unique(ty)
    rng = np.random.default_rng(args["seed"])
    smallest = 0
    for _ in range(args["max_redraws"]):
        train_idx = _draw_train_split(
            ty, classes, num_users, args["alpha"], args["sampling_ratio"], rng
        )
        smallest = min(i.size for i in train_idx)
        if smallest >= args["min_samples"]:
            test_idx = per_user_test_split(ty, vy, train_idx, num_classes)
            return Partition(train_idx, test_idx, num_classes)
    raise _no_split(args, smallest)


def _checked_labels(
    train_y: np.ndarray[Any, Any], test_y: np.ndarray[Any, Any], args: SplitArgs
) -> tuple[IntArray, IntArray]:
    """Both label arrays as flat int64, once the parameters and the labels are checked."""
    ty = np.asarray(train_y, dtype=np.int64).reshape(-1)
    vy = np.asarray(test_y, dtype=np.int64).reshape(-1)
    num_users, alpha, ratio = args["num_users"], args["alpha"], args["sampling_ratio"]
    max_redraws, num_classes = args["max_redraws"], args["num_classes"]
    if num_users < 1 or max_redraws < 1 or not alpha > 0 or not 0 < ratio <= 1:
        raise PartitionError(
            f"invalid split parameters: num_users={num_users}, alpha={alpha}, "
            f"sampling_ratio={ratio}, max_redraws={max_redraws}"
        )
    for name, y in (("train", ty), ("test", vy)):
        if y.size and (y.min() < 0 or y.max() >= num_classes):
            raise PartitionError(f"{name} labels outside [0, {num_classes})")
    return ty, vy


def _no_split(args: SplitArgs, smallest: int) -> PartitionError:
    return PartitionError(
        f"no Dirichlet split with alpha={args['alpha']}, num_users={args['num_users']}, "
        f"sampling_ratio={args['sampling_ratio']} gave every user "
        f"min_samples={args['min_samples']} after max_redraws={args['max_redraws']} draws "
        f"(last draw's smallest user: {smallest}); "
        "raise alpha or max_redraws, or lower num_users or min_samples"
    )


def official_partition(
    train_y: np.ndarray[Any, Any],
    test_y: np.ndarray[Any, Any],
    *,
    variant: Variant = "mnist",
    **args: Unpack[SplitArgs],
) -> Partition:
    """The official script's split, draw for draw (`fedgen.data.official_draws`).

    Parameters are those of `dirichlet_partition`; `seed` seeds both of the script's
    generators (42 reproduces the official split) and `variant` picks the MNIST or the
    EMNIST script. Train indices are stored class by class in the shuffled class order; each
    user's test samples come label by label in the script's set order (`official_label_order`).

    Raises
    ------
    PartitionError
        If the parameters are invalid, no draw satisfies `min_samples`, or the official
        EMNIST script itself could not split with them.
    """
    ty, vy = _checked_labels(train_y, test_y, args)
    try:
        train_idx, _ = official_train_split(ty, variant=variant, **args)
    except OfficialSplitError as exc:
        raise PartitionError(str(exc)) from None
    smallest = min(i.size for i in train_idx)
    if smallest < args["min_samples"]:
        raise _no_split(args, smallest)
    test_idx = per_user_test_split(ty, vy, train_idx, args["num_classes"], label_order="official")
    return Partition(train_idx, test_idx, args["num_classes"])


def group_partition(
    train_groups: np.ndarray[Any, Any],
    test_groups: np.ndarray[Any, Any],
    *,
    num_users: int,
    num_classes: int = 2,
) -> Partition:
    """Split by a user id carried by every sample (CelebA's groups of celebrities).

    Each user's indices are in dataset order. Raises PartitionError if a group id lies
    outside ``[0, num_users)`` or a user has no training samples.
    """
    tg = np.asarray(train_groups, dtype=np.int64).reshape(-1)
    vg = np.asarray(test_groups, dtype=np.int64).reshape(-1)
    for name, g in (("train", tg), ("test", vg)):
        if g.size and (g.min() < 0 or g.max() >= num_users):
            raise PartitionError(f"{name} group ids outside [0, num_users={num_users})")
    train_idx = _by_group(tg, num_users)
    empty = [u for u, i in enumerate(train_idx) if i.size == 0]
    if empty:
        raise PartitionError(f"users {empty[:10]} have no training samples (num_users={num_users})")
    test_idx = _by_group(vg, num_users)
    return Partition(train_idx, test_idx, num_classes)


def _by_group(groups: IntArray, num_users: int) -> list[IntArray]:
    """Each group's sample positions in dataset order (a stable sort: one pass, not one scan
    of the dataset per user, which took 30 s for 10,000 users of synthetic-fedprox)."""
    order = np.argsort(groups, kind="stable").astype(np.int64)
    bounds = np.searchsorted(groups[order], np.arange(num_users + 1))
    return [order[bounds[u] : bounds[u + 1]] for u in range(num_users)]


#: Stream of the validation draw under `data_seed`: its own generator, so the split's draws
#: (and a split without validation data) are those of a spec without `val_fraction`.
VAL_STREAM = 7


def carve_validation(part: Partition, fraction: float, seed: int) -> Partition:
    """Hold out `fraction` of each user's training samples as its validation data.

    Each user in order gets ``floor(fraction * n)`` of its n training samples (at least 1
    when n >= 2 and fraction > 0), drawn without replacement by one
    ``default_rng(SeedSequence([seed, VAL_STREAM]))``; the rest stay its training data in
    their assignment order. ``fraction`` 0 returns `part` unchanged (no validation data).
    The test split is not touched (it was matched to the labels before the carve).
    """
    if not 0.0 <= fraction <= 0.5:
        raise PartitionError(f"val_fraction={fraction} outside [0, 0.5]")
    if fraction == 0.0:
        return part
    rng = np.random.default_rng(np.random.SeedSequence([seed, VAL_STREAM]))
    train: list[IntArray] = []
    val: list[IntArray] = []
    for idx in part.train_indices:
        n = int(idx.size)
        k = int(np.floor(fraction * n))
        if k == 0 and n >= 2:
            k = 1
        picked = np.sort(rng.choice(n, size=k, replace=False)) if k else np.zeros(0, np.int64)
        val.append(idx[picked].astype(np.int64))
        train.append(np.delete(idx, picked).astype(np.int64))
    return replace(part, train_indices=train, val_indices=val)


def official_min_samples(dataset: str, num_classes: int) -> int:
    """The official scripts' minimum per user: 10 x classes for EMNIST (260), 10 elsewhere (§2.1-2.2)."""
    return 10 * num_classes if dataset == "emnist-letters" else 10


def build_partition(
    ds: DatasetTensors,
    p: PartitionSpec,
    default_draws: Literal["official", "fedgen"] = "fedgen",
) -> Partition:
    """Build the split a spec asks for: natural groups if the dataset has them, else Dirichlet.

    `p.draws` picks the Dirichlet draws; when it is None, `default_draws` does (pass the
    fidelity profile's choice, ``fedgen.fidelity.resolve(spec).draws``). The per-user test
    indices are always built; a ``global`` test protocol simply evaluates on the whole test
    set instead of using them.
    """
    val_fraction = p.val_fraction
    if ds.train_groups is not None and ds.test_groups is not None:
        groups = group_partition(
            ds.train_groups, ds.test_groups, num_users=p.num_users, num_classes=ds.num_classes
        )
        return carve_validation(groups, val_fraction, p.data_seed)
    # `draws` is a knob field (fedgen.knobs), added to PartitionSpec when the class is built.
    draws = getattr(p, "draws", None) or default_draws
    args: SplitArgs = {
        "num_users": p.num_users,
        "num_classes": ds.num_classes,
        "alpha": p.alpha,
        "sampling_ratio": p.sampling_ratio,
        "min_samples": official_min_samples(ds.name, ds.num_classes)
        if p.min_samples is None
        else p.min_samples,
        "seed": p.data_seed,
        "max_redraws": p.max_redraws,
    }
    train_y, test_y = ds.train_y.numpy(), ds.test_y.numpy()
    if draws == "official":
        variant: Variant = "emnist" if ds.name == "emnist-letters" else "mnist"
        split = official_partition(train_y, test_y, variant=variant, **args)
    else:
        split = dirichlet_partition(train_y, test_y, **args)
    return carve_validation(split, val_fraction, p.data_seed)


#: Training-set label counts of the built-ins the API can check without loading them (their
#: declarations'; a plugin's: `fedgen.data.registry.get_dataset(name).train_class_counts`).
KNOWN_TRAIN_CLASS_COUNTS: dict[str, tuple[int, ...]] = {
    d.name: d.train_class_counts for d in BUILTINS if d.train_class_counts is not None
}

#: Largest training set whose Dirichlet draws `infeasible_partition` replays (synthetic sizes),
#: and the most draws it replays (a spec allowing more is not refused on the replay).
MAX_REPLAYED_SAMPLES = 20_000
MAX_REPLAYED_DRAWS = 1000


def synthetic_class_counts(num_train: int, num_classes: int) -> tuple[int, ...]:
    """Label counts of `make_synthetic` (labels ``arange(n) % classes``, permuted)."""
    return tuple(
        num_train // num_classes + (c < num_train % num_classes) for c in range(num_classes)
    )


def infeasible_partition(
    class_counts: tuple[int, ...],
    *,
    num_users: int,
    alpha: float,
    sampling_ratio: float,
    min_samples: int,
    seed: int,
    max_redraws: int,
    draws: Literal["official", "fedgen"] = "fedgen",
) -> str | None:
    """Why a Dirichlet split of a training set with these label counts cannot succeed, or None.

    Pure and cheap: first the bound (the samples kept by `sampling_ratio` and the per-user cap
    must give every user `min_samples`); then, for small sets (the synthetic one), the very draws
    the worker will make (they depend on the label counts and the seed only), so a split that
    would raise PartitionError on the worker is refused at submission.
    """
    n = sum(class_counts)
    cap = sampling_ratio * n / num_users
    kept = sum(
        int(min(cap, int(sampling_ratio * c))) if sampling_ratio < 1 else c for c in class_counts
    )
    if kept < num_users * min_samples:
        return (
            f"sampling_ratio={sampling_ratio} keeps {kept} of {n} training samples, fewer than "
            f"num_users={num_users} x min_samples={min_samples} = {num_users * min_samples}"
        )
    if n > MAX_REPLAYED_SAMPLES or max_redraws > MAX_REPLAYED_DRAWS:
        return None
    train_y = np.repeat(np.arange(len(class_counts), dtype=np.int64), class_counts)
    test_y = np.arange(len(class_counts), dtype=np.int64)
    args: dict[str, Any] = {
        "num_users": num_users,
        "num_classes": len(class_counts),
        "alpha": alpha,
        "sampling_ratio": sampling_ratio,
        "min_samples": min_samples,
        "seed": seed,
        "max_redraws": max_redraws,
    }
    try:
        if draws == "official":
            official_partition(train_y, test_y, variant="mnist", **args)
        else:
            dirichlet_partition(train_y, test_y, **args)
    except PartitionError as exc:
        return str(exc)
    return None
