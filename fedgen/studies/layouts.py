"""Studies' table layouts: rows and columns as labelled spec fields, and the paper's cells.

A table has rows and columns; each row and column is a label and the spec fields it
sets (`Axis`). A run's cell is the row and column whose fields its spec matches
(`Layout.cell_of`). One `_layout_*` function per study builds its `Layout` for a dataset,
with the paper's numbers (`fedgen.paper`) attached only where the paper has that row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fedgen import paper
from fedgen.algorithms import registry
from fedgen.generator_presets import PRESETS, dataset_family
from fedgen.spec import ExperimentSpec
from fedgen.studies.tuning import GRID_KEY, grid_values, tuned_fields

ALL_ALGORITHMS: tuple[str, ...] = tuple(paper.PAPER_LABELS)
# The figure-5 studies compare FedGen with the main baselines. Which curves the figure
# draws is not in the reference; this choice (no FedDistill, no FedEnsemble) is ours.
FIG5_ALGORITHMS: tuple[str, ...] = ("fedavg", "fedprox", "feddistill-plus", "feddf", "fedgen")


@dataclass(frozen=True)
class Axis:
    """One dimension of a study's table: (label, dotted spec fields it sets) per entry.

    Every entry sets the same fields, so the axis is one (possibly zipped) grid key.
    """

    entries: tuple[tuple[str, dict[str, Any]], ...]

    @property
    def labels(self) -> list[str]:
        """The entries' labels, in order."""
        return [label for label, _ in self.entries]

    def grid_item(self) -> tuple[str, list[Any]]:
        """(grid key, values): "a" -> [v, ...] or "a,b" -> [[va, vb], ...]."""
        fields = list(self.entries[0][1])
        for label, values in self.entries:
            if list(values) != fields:
                raise ValueError(f"axis entry {label!r} sets {list(values)}, expected {fields}")
        if len(fields) == 1:
            return fields[0], [values[fields[0]] for _, values in self.entries]
        return ",".join(fields), [[values[f] for f in fields] for _, values in self.entries]

    def match(self, flat: dict[str, Any], algorithm: dict[str, Any]) -> str | None:
        """The label of the entry whose fields the (flattened) spec has, or None."""
        for label, values in self.entries:
            if all(_field_matches(flat, algorithm, f, v) for f, v in values.items()):
                return label
        return None


def _field_matches(flat: dict[str, Any], algorithm: dict[str, Any], key: str, want: Any) -> bool:
    if key == "algorithm":
        want_map = {"name": want} if isinstance(want, str) else dict(want)
        return all(algorithm.get(k) == v for k, v in want_map.items())
    have = flat.get(key)
    if isinstance(want, float | int) and isinstance(have, float | int):
        return float(have) == float(want)
    return bool(have == want)


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


MeanStd = tuple[float, float]


@dataclass(frozen=True)
class Layout:
    """A study's table on one dataset: rows, columns, the paper's cells and fixed fields."""

    rows: Axis
    columns: Axis
    paper: dict[tuple[str, str], MeanStd] = field(default_factory=dict)
    base: dict[str, Any] = field(default_factory=dict)
    reference_row: str | None = None  # Table 3: the row others are divided by
    # A tuned study (`fedgen.studies.tuning`): the columns' sweep values, when they are more
    # than one per column (each method's grid), and the dotted fields a cell tunes by
    # validation (its runs grouped by their values; the best configuration is reported).
    column_grid: tuple[str, list[Any]] | None = None
    tuned: tuple[str, ...] = ()

    def cell_of(self, spec: ExperimentSpec) -> tuple[str, str] | None:
        """(row, column) of a run's spec, or None when it belongs to no cell."""
        dumped = spec.model_dump(mode="json")
        flat, alg = _flatten(dumped), dumped["algorithm"]
        row, col = self.rows.match(flat, alg), self.columns.match(flat, alg)
        return (row, col) if row is not None and col is not None else None


def _algorithm_axis(names: Sequence[str]) -> Axis:
    return Axis(tuple((registry.label(a), {"algorithm": a}) for a in names))


def _setting_label(setting: str, steps: int) -> str:
    return f"{setting}, T={steps}"


def _t1_rows(dataset: str) -> list[tuple[str, int, dict[str, Any]]]:
    """(setting, T, fields) of Table 1's rows for a dataset (α rows on datasets it lacks)."""
    if dataset == "celeba":
        return [
            (f"r={k}/{n}", 20, {"partition.num_users": n, "users_per_round": k, "local_steps": 20})
            for n, k in ((10, 5), (25, 5), (25, 10))
        ]
    pairs: tuple[tuple[float, int], ...] = ((0.05, 20), (0.1, 20), (1.0, 20))
    if dataset == "emnist-letters":
        pairs = ((0.05, 20), (0.1, 20), (10.0, 20), (1.0, 20), (1.0, 40))
    return [(paper.format_alpha(a), t, {"partition.alpha": a, "local_steps": t}) for a, t in pairs]


def _table1_paper(
    dataset: str, settings: Sequence[tuple[str, str, int]], algorithms: Sequence[str]
) -> dict[tuple[str, str], MeanStd]:
    """Paper cells for (row label, setting, T) rows from Table 1 of `dataset` (if it has it)."""
    out: dict[tuple[str, str], MeanStd] = {}
    label = paper.DATASETS.get(dataset, dataset)
    for row, setting, steps in settings:
        pub = paper.TABLE1.get(paper.Setting(label, setting, steps), {})
        for a in algorithms:
            if a in pub:
                out[(row, registry.label(a))] = pub[a]
    return out


def layout_table1(dataset: str) -> Layout:
    """Table 1: each of the dataset's settings (rows) x the seven algorithms."""
    rows = _t1_rows(dataset)
    labelled = [(_setting_label(s, t), s, t) for s, t, _ in rows]
    return Layout(
        rows=Axis(tuple((lab, f) for (lab, _, _), (_, _, f) in zip(labelled, rows, strict=True))),
        columns=_algorithm_axis(ALL_ALGORITHMS),
        paper=_table1_paper(dataset, labelled, ALL_ALGORITHMS),
    )


TABLE2_PRESETS: tuple[str, ...] = ("cnn0", "default", "cnn1", "cnn2", "cnn3")  # the paper's order


def preset_label(dataset: str, preset: str) -> str:
    """ "FedGen cnn0 [64,256]": the preset and its [d_ε, d_h] on this dataset."""
    hidden, noise = PRESETS[dataset_family(dataset)][preset]
    return f"FedGen {preset} [{noise},{hidden}]"


def layout_table2(dataset: str) -> Layout:
    """Table 2: FedAvg and FedGen's generator presets (columns) at α = 0.1."""
    row = _setting_label(paper.format_alpha(0.1), 20)
    cols: list[tuple[str, dict[str, Any]]] = [("FedAvg", {"algorithm": {"name": "fedavg"}})]
    cols += [
        (preset_label(dataset, p), {"algorithm": {"name": "fedgen", "preset": p}})
        for p in TABLE2_PRESETS
    ]
    pub: dict[tuple[str, str], MeanStd] = {}
    if dataset == "emnist-letters":
        pub[(row, "FedAvg")] = paper.TABLE2_FEDAVG
        for p in TABLE2_PRESETS:
            pub[(row, preset_label(dataset, p))] = paper.TABLE2_FEDGEN[p]
    return Layout(
        rows=Axis(((row, {"partition.alpha": 0.1}),)), columns=Axis(tuple(cols)), paper=pub
    )


TABLE3_BG: tuple[int, ...] = tuple(paper.TABLE3_FEDGEN)


def layout_table3(dataset: str) -> Layout:
    """Table 3: FedAvg (the reference row) and FedGen per B_G (rows) at α = 0.1."""
    col = _setting_label(paper.format_alpha(0.1), 20)
    rows: list[tuple[str, dict[str, Any]]] = [("FedAvg", {"algorithm": {"name": "fedavg"}})]
    rows += [
        (f"FedGen B_G={bg}", {"algorithm": {"name": "fedgen", "gen_batch_size": bg}})
        for bg in TABLE3_BG
    ]
    pub: dict[tuple[str, str], MeanStd] = {}
    if dataset == "emnist-letters":
        pub[("FedAvg", col)] = paper.TABLE3_FEDAVG
        for bg in TABLE3_BG:
            pub[(f"FedGen B_G={bg}", col)] = paper.TABLE3_FEDGEN[bg]
    return Layout(
        rows=Axis(tuple(rows)),
        columns=Axis(((col, {"partition.alpha": 0.1}),)),
        paper=pub,
        reference_row="FedAvg",
    )


TABLE4_ALGORITHMS: tuple[str, ...] = ("fedavg", "feddistill-plus", "feddf", "fedgen")
SHARE_LABELS = {"predictor": "predictor only", "all": "whole model"}


def layout_table4(dataset: str) -> Layout:
    """Table 4: α x what is shared (rows) x the four algorithms that can share the predictor."""
    rows: list[tuple[str, dict[str, Any]]] = []
    pub: dict[tuple[str, str], MeanStd] = {}
    for alpha in paper.TABLE4:
        for share in ("predictor", "all"):
            label = f"{paper.format_alpha(alpha)}, {SHARE_LABELS[share]}"
            rows.append((label, {"partition.alpha": alpha, "share": share}))
            if dataset != "mnist":
                continue
            if share == "predictor":
                for a, ms in paper.TABLE4[alpha].items():
                    pub[(label, registry.label(a))] = ms
            else:  # sharing the whole model is Table 1's MNIST row (α = 10 is not there)
                pub.update(
                    _table1_paper(
                        dataset, [(label, paper.format_alpha(alpha), 20)], TABLE4_ALGORITHMS
                    )
                )
    return Layout(rows=Axis(tuple(rows)), columns=_algorithm_axis(TABLE4_ALGORITHMS), paper=pub)


STRAGGLER_RATIOS: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 0.9)


def layout_stragglers(dataset: str) -> Layout:
    """Figure 5b: the active-user ratios r (rows) x the figure-5 algorithms."""
    users = 25 if dataset == "celeba" else 20
    rows: list[tuple[str, dict[str, Any]]] = []
    labelled: list[tuple[str, str, int]] = []
    for r in STRAGGLER_RATIOS:
        k = max(1, int(r * users + 0.5))
        setting = f"r={k}/{users}"
        rows.append(
            (_setting_label(setting, 20), {"partition.num_users": users, "users_per_round": k})
        )
        labelled.append((_setting_label(setting, 20), setting, 20))
    return Layout(
        rows=Axis(tuple(rows)),
        columns=_algorithm_axis(FIG5_ALGORITHMS),
        paper=_table1_paper(dataset, labelled, FIG5_ALGORITHMS),
    )


MODELS: tuple[tuple[str, str], ...] = (
    ("official-cnn", "official-cnn (the official code's CNN)"),
    ("mcmahan-cnn", "mcmahan-cnn (McMahan et al. 2017)"),
)


def layout_mlp_vs_cnn(dataset: str) -> Layout:
    """Figure 5c/d: the two CNNs (rows) x the figure-5 algorithms."""
    rows = tuple(
        (f"{label}, α=0.1", {"model.name": name, "partition.alpha": 0.1}) for name, label in MODELS
    )
    # The official CNN's cells carry Table 1's α = 0.1 row (the paper's CNN runs).
    official = rows[0][0]
    return Layout(
        rows=Axis(rows),
        columns=_algorithm_axis(FIG5_ALGORITHMS),
        paper=_table1_paper(dataset, [(official, "α=0.1", 20)], FIG5_ALGORITHMS),
    )


def layout_delay(dataset: str) -> Layout:
    """Figure 5e/f: T = 20 and T = 40 at α = 1 (rows) x the figure-5 algorithms."""
    rows = tuple(
        (_setting_label("α=1", t), {"partition.alpha": 1.0, "local_steps": t}) for t in (20, 40)
    )
    return Layout(
        rows=Axis(rows),
        columns=_algorithm_axis(FIG5_ALGORITHMS),
        paper=_table1_paper(
            dataset,
            [(lab, "α=1", t) for (lab, _), t in zip(rows, (20, 40), strict=True)],
            FIG5_ALGORITHMS,
        ),
    )


# The extended Table 1: the paper's main baselines and FedGen beside the
# non-IID baselines reviewers ask for, each with its paper's hyperparameters for a small
# CNN (the study's docstring in `registry.py` says which), under both test protocols.
TABLE1_EXTENDED: tuple[tuple[str, dict[str, Any]], ...] = (
    ("fedavg", {}),
    ("fedprox", {}),
    ("fedgen", {}),
    ("feddf", {}),
    ("scaffold", {"global_lr": 1.0}),
    ("feddyn", {"alpha": 0.01}),
    ("moon", {"mu": 1.0, "temperature": 0.5}),
    ("fednova", {"local_steps_spread": 12}),
    ("fedadam", {"server_lr": 0.01, "beta1": 0.9, "beta2": 0.99, "tau": 0.001}),
    ("fedyogi", {"server_lr": 0.01, "beta1": 0.9, "beta2": 0.99, "tau": 0.001}),
    ("fedavgm", {"server_momentum": 0.9, "server_lr": 1.0}),
)
TEST_PROTOCOLS: tuple[tuple[str, str], ...] = (
    ("per_user", "per-user test"),
    ("global", "global test"),
)


def _protocol_rows(
    dataset: str,
) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, str, int]]]:
    """Table 1's rows, each under both test protocols, and the per-user ones' (row, setting,
    T) for the paper's cells."""
    rows: list[tuple[str, dict[str, Any]]] = []
    per_user: list[tuple[str, str, int]] = []
    for setting, steps, fields in _t1_rows(dataset):
        for protocol, words in TEST_PROTOCOLS:
            row = f"{_setting_label(setting, steps)}, {words}"
            rows.append((row, {**fields, "partition.test_protocol": protocol}))
            if protocol == "per_user":
                per_user.append((row, setting, steps))
    return rows, per_user


def layout_table1_extended(dataset: str) -> Layout:
    """Extended Table 1: (α, test protocol) rows x FedAvg, FedProx, FedGen, FedDF and the
    non-IID baselines; the paper's Table 1 numbers (per-user protocol) where it has them."""
    columns = Axis(
        tuple(
            (
                registry.label(name),
                {"algorithm": {"name": name, **hp}},
            )
            for name, hp in TABLE1_EXTENDED
        )
    )
    rows, per_user = _protocol_rows(dataset)
    in_paper = [name for name, _ in TABLE1_EXTENDED if name in paper.PAPER_LABELS]
    return Layout(
        rows=Axis(tuple(rows)),
        columns=columns,
        paper=_table1_paper(dataset, per_user, in_paper),
        # Batchable algorithms stack a round's clients; the others run sequential and
        # record why (info.json: execution_reason). The study's note gives the speed-up.
        base={"execution": "batched"},
    )


#: The CIFAR-10 study's columns (not in the FedGen paper): the algorithms the follow-up papers
#: compare on CIFAR-10 with ResNets, at Table 1 extended's hyperparameters (MOON μ = 5: Li et
#: al.'s CIFAR-10 value).
CIFAR10_ALGORITHMS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("fedavg", {}),
    ("fedprox", {}),
    ("scaffold", {"global_lr": 1.0}),
    ("feddyn", {"alpha": 0.01}),
    ("moon", {"mu": 5.0, "temperature": 0.5}),
    ("feddf", {}),
    ("fedgen", {}),
)
CIFAR10_ALPHAS = (0.1, 0.5)


def layout_table1_tuned(dataset: str) -> Layout:
    """Extended Table 1 tuned: its (α, test protocol) rows and its eleven methods, each over
    its own grid (`fedgen.studies.tuning.TUNING_GRIDS`, the other parameters as the extended
    table's); a cell reports the configuration with the best mean validation figure. No
    paper cells: the paper's numbers are top-5 rounds chosen on the test set."""
    rows, _ = _protocol_rows(dataset)
    methods = tuple(name for name, _ in TABLE1_EXTENDED)
    return Layout(
        rows=Axis(tuple(rows)),
        columns=_algorithm_axis(methods),
        base={"partition": {"val_fraction": 0.1}, "execution": "batched"},
        column_grid=(GRID_KEY, grid_values(methods, dict(TABLE1_EXTENDED))),
        tuned=tuned_fields(methods),
    )


def layout_cifar10(dataset: str) -> Layout:  # noqa: ARG001 (a layout's signature)
    """CIFAR-10 with ResNet-18 (GroupNorm): α rows x seven algorithms; no paper cells."""
    columns = Axis(
        tuple(
            (
                registry.label(name),
                {"algorithm": {"name": name, **hp}},
            )
            for name, hp in CIFAR10_ALGORITHMS
        )
    )
    rows = Axis(tuple((paper.format_alpha(a), {"partition.alpha": a}) for a in CIFAR10_ALPHAS))
    return Layout(rows=rows, columns=columns, base={"model": {"name": "resnet18"}})
