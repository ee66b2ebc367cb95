"""Compact run names for the Runs table: what differs among the runs listed, abbreviated.

"FedProx · FMNIST · T=40 · R=30 · u=20 · s1": the algorithm's label and the dataset's short
name without a key, the paper's symbols for the settings people vary most (T local steps
as in the paper, R rounds as in docs/metrics.md, u users per round, α the Dirichlet
concentration, B_G the generator's batch), any other field by its last dotted part, and
the seed last, always. The long form (`compare_view.run_names`, "algorithm=fedprox, ...")
stays for Compare's legends; this one must leave room for the table's other columns.
No Streamlit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from api.schemas.runs import RunPublic
from fedgen import specdict
from fedgen.algorithms.registry import label as algorithm_label

SEP = " · "
# Dataset spec names as the table writes them (an unknown one is shown as it is).
DATASET_SHORT: dict[str, str] = {
    "mnist": "MNIST",
    "fashion-mnist": "FMNIST",
    "emnist-letters": "EMNIST",
    "celeba": "CelebA",
    "synthetic": "Synth",
    "folder": "folder",
}
# Dotted spec field -> its symbol (the paper's where it has one).
SYMBOLS: dict[str, str] = {
    "local_steps": "T",
    "rounds": "R",
    "users_per_round": "u",
    "partition.alpha": "α",
    "partition.num_users": "N",
    "batch_size": "B",
    "algorithm.gen_batch_size": "B_G",
    "learning_rate": "lr",
    "model.name": "model",
}
# The symbols' meanings, for the column's help.
LEGEND = (
    "T local steps, R rounds, u users per round, α Dirichlet α, N users, B batch size, "
    "B_G generator batch, s the seed"
)
# Shown first, in this order; the rest alphabetically.
_FIRST = ("algorithm.name", "data.name")
# Paths: only their last part ("root=…/no-mnist"); a whole path would crowd out the columns.
PATHS = ("data.root", "data.folder.path")


def part(field: str, value: Any) -> str:
    """One differing field as the name writes it: `FedProx`, `FMNIST`, `T=40`, `preset=cnn1`."""
    text = specdict.format_value(value)
    if field == "algorithm.name":
        return algorithm_label(text)
    if field == "data.name":
        return DATASET_SHORT.get(text, text)
    if field in PATHS and "/" in text.rstrip("/"):
        text = "…/" + text.rstrip("/").rsplit("/", 1)[-1]
    return f"{SYMBOLS.get(field, field.rsplit('.', 1)[-1])}={text}"


def compact_name(fields: Mapping[str, Any], seed: Any) -> str:
    """The name of a run from its differing fields (dotted -> value) and its seed, seed last."""
    order = sorted(fields, key=lambda f: (_FIRST.index(f) if f in _FIRST else len(_FIRST), f))
    parts = [part(f, fields[f]) for f in order if fields[f] is not None]
    return SEP.join([*parts, f"s{'?' if seed is None else seed}"])


def compact_names(runs: Iterable[RunPublic]) -> dict[str, str]:
    """Run id -> its compact name among `runs`; " #2" marks a repeated spec.

    When nothing but the seed differs (one run, or seeds of one spec) the algorithm and
    the dataset lead, so a name never says only "s0".
    """
    flats = {r.id: specdict.flatten(r.spec) for r in runs}
    varying = specdict.differing_fields(flats.values()) or list(_FIRST)
    out: dict[str, str] = {}
    taken: dict[str, int] = {}
    for rid, flat in flats.items():
        shown = {f: flat[f] for f in varying if flat.get(f) is not None}
        name = compact_name(shown, flat.get("seed"))
        taken[name] = taken.get(name, 0) + 1
        out[rid] = name if taken[name] == 1 else f"{name} #{taken[name]}"
    return out
