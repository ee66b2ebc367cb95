"""A run's display name, the one every page uses (Runs, Live, Compare, Sweep tables, Paper,
Trash): the algorithm's label and the dataset, what differs among the runs listed, abbreviated,
and the seed. An algorithm is named by its registry label everywhere (`algorithm_name`); the
paper's own label only in a reproduced paper table, marked (`paper_column`).

"FedProx · FMNIST · T=40 · R=30 · u=20 · s1": the algorithm's label and the dataset's short
name without a key, the paper's symbols for the settings people vary most (T local steps
as in the paper, R rounds as in docs/metrics.md, u users per round, α the Dirichlet
concentration, B_G the generator's batch), any other field by its last dotted part, and
the seed last, always. The algorithm and the dataset always lead, so one run keeps the
same start of its name on every page, whatever else is listed with it. The pages name the
runs they list with `dashboard.run_name.compact_names`; a run alone (a webhook's message) is
`run_label`. Torch-free, no server code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedgen import paper, specdict
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
FIRST = ("algorithm.name", "data.name")
# Paths: only their last part ("root=…/no-mnist"); a whole path would crowd out the columns.
PATHS = ("data.root", "data.folder.path")


def algorithm_name(name: str) -> str:
    """An algorithm as every page names it: its registry label ("FedDF"; unknown: as it is)."""
    return algorithm_label(name)


def paper_column(name: str) -> str:
    """An algorithm's column in a table reproduced from the paper: its label, and the paper's
    own where that differs, marked as such ("FedDF (paper: FedDFusion)")."""
    ours, theirs = algorithm_name(name), paper.PAPER_LABELS.get(name)
    return ours if theirs in (None, ours) else f"{ours} (paper: {theirs})"


def base_name(algorithm: str, dataset: str) -> str:
    """A run known only by its algorithm and dataset (the Trash): "FedAvg · folder"."""
    return SEP.join([part("algorithm.name", algorithm), part("data.name", dataset)])


def part(field: str, value: Any) -> str:
    """One differing field as the name writes it: `FedProx`, `FMNIST`, `T=40`, `preset=cnn1`."""
    text = specdict.format_value(value)
    if field == "algorithm.name":
        return algorithm_name(text)
    if field == "data.name":
        return DATASET_SHORT.get(text, text)
    if field in PATHS and "/" in text.rstrip("/"):
        text = "…/" + text.rstrip("/").rsplit("/", 1)[-1]
    return f"{SYMBOLS.get(field, field.rsplit('.', 1)[-1])}={text}"


def compact_name(fields: Mapping[str, Any], seed: Any) -> str:
    """The name of a run from its differing fields (dotted -> value) and its seed, seed last."""
    order = sorted(fields, key=lambda f: (FIRST.index(f) if f in FIRST else len(FIRST), f))
    parts = [part(f, fields[f]) for f in order if fields[f] is not None]
    return SEP.join([*parts, f"s{'?' if seed is None else seed}"])


def run_label(spec: Mapping[str, Any]) -> str:
    """One run named alone, by the same parts: "FedAvg · Synth · α=0.1 · s0" ("?" where a
    field is missing)."""
    fields = {f: specdict.get_dotted(spec, f, "?") for f in (*FIRST, "partition.alpha")}
    return compact_name(fields, specdict.get_dotted(spec, "seed"))
