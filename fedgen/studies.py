"""Studies: every experiment of the paper as a named, versioned sweep template with a verdict.

A study knows what it reproduces (Table 1-4, the figure-5 studies), the paper's
dataset and settings (the default), how it expands into one sweep (a base spec and a
grid, `fedgen.sweep`), the statistic the paper reports, and the paper's numbers per
cell (`fedgen.paper`). `study_table` turns finished runs into the study's table:
per cell ours (mean ± std, n) beside the paper's, Δ and a verdict.

Layout: a table has rows and columns; each row and column is a label and the spec
fields it sets. A run's cell is the row and column whose fields its spec matches.
Overrides: `dataset` (any dataset; the paper's numbers are attached only where the
paper has that row), `seeds` (seeds 0..N-1) and `rounds`.

Pure: pydantic and the standard library; no torch at import. The CLI (`fedgen study`),
the API (/api/v1/studies) and the dashboard's Paper page all use this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fedgen import paper
from fedgen.algorithms.registry import get_algorithm
from fedgen.data.registry import dataset_names
from fedgen.fidelity import resolve
from fedgen.generator_presets import PRESETS, dataset_family
from fedgen.spec import MAX_ROUNDS, DatasetName, ExperimentSpec
from fedgen.stats import mean_std, pooled_top5, reported_curve
from fedgen.sweep import SweepSpec, expand

MAX_STUDY_SEEDS = 10
TAG_PREFIX = "study:"

Statistic = Literal["top5", "ms_per_update"]
Verdict = Literal[
    "within", "better", "worse", "no paper number", "no runs yet", "reference"
]  # fmt: skip
VERDICTS: tuple[str, ...] = (
    "within",
    "better",
    "worse",
    "no paper number",
    "no runs yet",
    "reference",
)

# The paper's experimental setting (reference §1.2): 20 users, r = 50 %, T = 20, B = 32,
# at most 50 % of the training data. Rows and columns override what they vary.
PAPER_SETTING: dict[str, Any] = {
    "partition": {"num_users": 20, "sampling_ratio": 0.5},
    "users_per_round": 10,
    "local_steps": 20,
    "batch_size": 32,
}
# Per-dataset additions: the 20-user Dirichlet split at α <= 0.1 finds every user 10
# samples only with about 10k synthetic samples (the default 2,000 exhausts the re-draws).
DATASET_FIELDS: dict[str, dict[str, Any]] = {"synthetic": {"synthetic_samples": 10_000}}
ALL_ALGORITHMS: tuple[str, ...] = tuple(paper.PAPER_LABELS)
# The figure-5 studies compare FedGen with the main baselines. Which curves the figure
# draws is not in the reference; this choice (no FedDistill, no FedEnsemble) is ours.
FIG5_ALGORITHMS: tuple[str, ...] = ("fedavg", "fedprox", "feddistill-plus", "feddf", "fedgen")

# -- CPU time estimate -------------------------------------------------------------
# Each algorithm's ms per round on one core at the paper setting is its declaration's
# `ms_per_round` (fedgen.algorithms.builtin says where the built-ins' come from; a plugin
# cannot register without one). The VM's speed varies about 2x from day to day, and the
# dataset and model factors are guesses: this is an estimate, not a measurement.
EST_DATASET_FACTOR: dict[str, float] = {
    "mnist": 1.0,
    "fashion-mnist": 1.0,
    "emnist-letters": 1.5,
    "celeba": 4.0,
    "synthetic": 0.3,
}
EST_MODEL_FACTOR: dict[str, float] = {"official-cnn": 1.0, "mcmahan-cnn": 8.0}


def estimate_cpu_s(spec: ExperimentSpec) -> float:
    """Estimated CPU seconds of one run on one core (the algorithm's `ms_per_round`, scaled)."""
    work = spec.users_per_round * spec.local_steps / 200.0  # 1.0 at the paper setting
    ms = (
        get_algorithm(spec.algorithm.name).ms_per_round
        * EST_DATASET_FACTOR.get(spec.data.name, 1.0)
        * EST_MODEL_FACTOR.get(spec.model.name, 1.0)
        * (0.3 + 0.7 * work)
    )
    return ms * spec.rounds / 1000.0


def format_duration(seconds: float) -> str:
    """12 s, 7 min, 3.2 h."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# -- layout --------------------------------------------------------------------------
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

    def cell_of(self, spec: ExperimentSpec) -> tuple[str, str] | None:
        """(row, column) of a run's spec, or None when it belongs to no cell."""
        dumped = spec.model_dump(mode="json")
        flat, alg = _flatten(dumped), dumped["algorithm"]
        row, col = self.rows.match(flat, alg), self.columns.match(flat, alg)
        return (row, col) if row is not None and col is not None else None


def _algorithm_axis(names: Sequence[str]) -> Axis:
    return Axis(tuple((paper.PAPER_LABELS[a], {"algorithm": a}) for a in names))


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


def _table1_paper(dataset: str, settings: Sequence[tuple[str, str, int]], algorithms: Sequence[str]) -> dict[tuple[str, str], MeanStd]:  # fmt: skip
    """Paper cells for (row label, setting, T) rows from Table 1 of `dataset` (if it has it)."""
    out: dict[tuple[str, str], MeanStd] = {}
    label = paper.DATASETS.get(dataset, dataset)
    for row, setting, steps in settings:
        pub = paper.TABLE1.get(paper.Setting(label, setting, steps), {})
        for a in algorithms:
            if a in pub:
                out[(row, paper.PAPER_LABELS[a])] = pub[a]
    return out


def _layout_table1(dataset: str) -> Layout:
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


def _layout_table2(dataset: str) -> Layout:
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


def _layout_table3(dataset: str) -> Layout:
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


def _layout_table4(dataset: str) -> Layout:
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
                    pub[(label, paper.PAPER_LABELS[a])] = ms
            else:  # sharing the whole model is Table 1's MNIST row (α = 10 is not there)
                pub.update(
                    _table1_paper(
                        dataset, [(label, paper.format_alpha(alpha), 20)], TABLE4_ALGORITHMS
                    )
                )
    return Layout(rows=Axis(tuple(rows)), columns=_algorithm_axis(TABLE4_ALGORITHMS), paper=pub)


STRAGGLER_RATIOS: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 0.9)


def _layout_stragglers(dataset: str) -> Layout:
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


def _layout_mlp_vs_cnn(dataset: str) -> Layout:
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


def _layout_delay(dataset: str) -> Layout:
    rows = tuple(
        (_setting_label("α=1", t), {"partition.alpha": 1.0, "local_steps": t}) for t in (20, 40)
    )
    return Layout(
        rows=Axis(rows),
        columns=_algorithm_axis(FIG5_ALGORITHMS),
        paper=_table1_paper(
            dataset, [(lab, "α=1", t) for (lab, _), t in zip(rows, (20, 40), strict=True)],
            FIG5_ALGORITHMS,
        ),
    )  # fmt: skip


# -- studies ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Study:
    """A named, versioned sweep template with the paper's numbers and statistic."""

    name: str
    version: int
    title: str
    reproduces: str
    paper_dataset: str
    statistic: Statistic
    layout: Callable[[str], Layout]
    notes: tuple[str, ...] = ()
    default_seeds: int = 3
    default_rounds: int = 200

    @property
    def tag(self) -> str:
        """The tag every run of this study's sweeps carries: "study:table1@v1"."""
        return f"{TAG_PREFIX}{self.name}@v{self.version}"

    @property
    def statistic_text(self) -> str:
        """The statistic in words."""
        if self.statistic == "ms_per_update":
            return (
                "ms per local update (the runner's time_user_ms: wall time per selected user "
                "per round), mean ± std over rounds pooled over seeds; verdicts compare the "
                "ratio to FedAvg, since absolute ms depend on the machine"
            )
        return (
            "top-5: the 5 best rounds of each seed pooled over seeds, mean ± std in % "
            "(the official plotting code's number, reference §1.1)"
        )

    @property
    def higher_is_better(self) -> bool:
        """Accuracy: higher is better; time: lower is better."""
        return self.statistic != "ms_per_update"


STUDIES: dict[str, Study] = {
    s.name: s
    for s in (
        Study(
            "table1", 1, "Table 1: accuracy of seven algorithms",
            "Table 1: FedAvg, FedProx, FedEnsemble, FedDistill, FedDistill+, FedDFusion and FedGen "
            "on each of the dataset's settings (MNIST α = 0.05, 0.1, 1; EMNIST α = 0.05, 0.1, 10 and "
            "α = 1 at T = 20, 40; CelebA r = 5/10, 5/25, 10/25), 3 seeds.",
            "mnist", "top5", _layout_table1,
            ("Datasets without a Table 1 row (Fashion-MNIST, synthetic) run MNIST's α settings; "
             "their cells have no paper number.",
             "EMNIST's 'α = 10' row is labelled so by the PDF extraction (reference §1.1 caveat)."),
        ),
        Study(
            "table2", 1, "Table 2: generator designs",
            "Table 2: FedGen with the generator presets [d_ε, d_h] = cnn0 [64,256], default "
            "[32,256], cnn1 [32,128], cnn2 [16,128], cnn3 [32,64] on EMNIST α = 0.1, FedAvg as "
            "the reference.",
            "emnist-letters", "top5", _layout_table2,
            ("A preset's dimensions depend on the dataset family (official GENERATORCONFIGS); "
             "the column label shows them.",),
        ),
        Study(
            "table3", 1, "Table 3: local training time vs B_G",
            "Table 3: ms per local update of FedGen with B_G = 8, 16, 32, 64, 128 synthetic "
            "samples per step, against FedAvg, on EMNIST α = 0.1.",
            "emnist-letters", "ms_per_update", _layout_table3,
            ("Absolute ms depend on the machine: verdicts compare the ratio to FedAvg "
             "(paper: 57.20-60.06 / 47.66 = 1.20-1.26x), the paper's ± divided by its FedAvg mean.",
             "Runs started in parallel (--jobs > 1) share the cores; all configurations share "
             "them alike, so the ratio stays fair but absolute ms rise."),
        ),
        Study(
            "table4", 1, "Table 4: sharing the predictor only",
            "Table 4: FedAvg, FedDistill+, FedDFusion and FedGen sharing only the last layer "
            "(predictor) vs the whole model, on MNIST α = 0.05, 0.1, 1, 10.",
            "mnist", "top5", _layout_table4,
            ("Whole-model cells carry Table 1's MNIST numbers; Table 1 has no α = 10 row.",),
        ),
        Study(
            "fig5-stragglers", 1, "Figure 5b: active-user ratio r",
            "Figure 5b: the straggler study on CelebA, active-user ratio r from 0.2 to 0.9 "
            "(25 users; 20 on other datasets).",
            "celeba", "top5", _layout_stragglers,
            ("The figure has no numbers in the reference; r = 5/25 and 10/25 carry Table 1's "
             "CelebA rows.",
             "r = 0.9 of 25 users is rounded to 23/25.",
             "Algorithms: FedAvg, FedProx, FedDistill+, FedDFusion, FedGen (our choice: the "
             "reference does not list the figure's curves)."),
        ),
        Study(
            "fig5-mlp-vs-cnn", 1, "Figure 5c/d: MLP vs CNN (here: two CNNs)",
            "Figures 5c, 5d: the classifier architecture on MNIST. The paper compares an MLP "
            "with a CNN; neither the official code nor this project has the MLP (the official "
            "mnist_cnn1/2 configs are unreachable, reference §3), so this study compares the two "
            "CNNs the project has: official-cnn vs mcmahan-cnn.",
            "mnist", "top5", _layout_mlp_vs_cnn,
            ("There is no MLP model in this code: the study is official-cnn vs mcmahan-cnn.",
             "The figure has no numbers in the reference; the official-cnn row carries Table 1's "
             "MNIST α = 0.1 row.",
             "Algorithms: FedAvg, FedProx, FedDistill+, FedDFusion, FedGen (our choice)."),
        ),
        Study(
            "fig5-delay", 1, "Figure 5e/f: communication delay T",
            "Figures 5e, 5f: local steps T = 20 vs T = 40 on EMNIST α = 1.",
            "emnist-letters", "top5", _layout_delay,
            ("The figure has no numbers in the reference; both rows carry Table 1's EMNIST "
             "α = 1 rows (T = 20 and T = 40).",
             "Algorithms: FedAvg, FedProx, FedDistill+, FedDFusion, FedGen (our choice)."),
        ),
    )
}  # fmt: skip


class UnknownStudy(KeyError):
    """No study of that name; the message names the known ones."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.message = f"unknown study {name!r}; known studies: {', '.join(STUDIES)}"
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


def get_study(name: str) -> Study:
    """The study of that name, or UnknownStudy."""
    try:
        return STUDIES[name]
    except KeyError:
        raise UnknownStudy(name) from None


class StudyOverrides(BaseModel):
    """What a study run may change; None keeps the paper's original."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: DatasetName | None = Field(None, description="Any dataset; default: the paper's.")
    seeds: int | None = Field(
        None, ge=1, le=MAX_STUDY_SEEDS, description="Run seeds 0..seeds-1; default 3."
    )
    rounds: int | None = Field(None, ge=1, le=MAX_ROUNDS, description="Default 200.")


@dataclass(frozen=True)
class Plan:
    """A study resolved for a dataset, seeds and rounds: its sweep, runs and CPU estimate."""

    study: Study
    dataset: str
    seeds: int
    rounds: int
    layout: Layout
    sweep: SweepSpec
    specs: list[ExperimentSpec]

    @property
    def runs(self) -> int:
        """Number of runs the sweep expands to."""
        return len(self.specs)

    @property
    def est_cpu_s(self) -> float:
        """Estimated CPU seconds on one core, all runs (an estimate: `estimate_cpu_s`)."""
        return sum(estimate_cpu_s(s) for s in self.specs)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the study, its overrides, the sweep and the paper's table."""
        return {
            **study_dict(self.study),
            "dataset": self.dataset,
            "seeds": self.seeds,
            "rounds": self.rounds,
            "runs": self.runs,
            "est_cpu_s": round(self.est_cpu_s, 1),
            "sweep": {"name": self.sweep.name, "base": self.sweep.base, "grid": self.sweep.grid},
            "rows": self.layout.rows.labels,
            "columns": self.layout.columns.labels,
            "paper": [
                {"row": r, "column": c, "mean": m, "std": s}
                for (r, c), (m, s) in self.layout.paper.items()
            ],
        }


def study_dict(study: Study) -> dict[str, Any]:
    """The definition of a study without a dataset (for lists)."""
    return {
        "name": study.name,
        "version": study.version,
        "tag": study.tag,
        "title": study.title,
        "reproduces": study.reproduces,
        "paper_dataset": study.paper_dataset,
        "datasets": list(dataset_names()),
        "statistic": study.statistic,
        "statistic_text": study.statistic_text,
        "higher_is_better": study.higher_is_better,
        "notes": list(study.notes),
        "defaults": {
            "dataset": study.paper_dataset,
            "seeds": study.default_seeds,
            "rounds": study.default_rounds,
        },
    }


def plan(study: Study | str, overrides: StudyOverrides | None = None) -> Plan:
    """The study's sweep for the overrides (the paper's original where None)."""
    s = get_study(study) if isinstance(study, str) else study
    o = overrides or StudyOverrides()
    dataset = o.dataset or s.paper_dataset
    seeds = o.seeds or s.default_seeds
    rounds = o.rounds or s.default_rounds
    layout = s.layout(dataset)
    base: dict[str, Any] = {
        "data": {"name": dataset, **DATASET_FIELDS.get(dataset, {})},
        **{k: (dict(v) if isinstance(v, dict) else v) for k, v in PAPER_SETTING.items()},
        "rounds": rounds,
        "tags": [s.tag],
        **layout.base,
    }
    grid: dict[str, list[Any]] = dict([layout.rows.grid_item(), layout.columns.grid_item()])
    grid["seed"] = list(range(seeds))
    sweep = SweepSpec(
        name=f"study {s.name} v{s.version} · {dataset} · seeds={seeds} · rounds={rounds}",
        base=base,
        grid=grid,
    )
    return Plan(s, dataset, seeds, rounds, layout, sweep, expand(sweep))


def study_of_base(base: dict[str, Any]) -> tuple[str, int] | None:
    """(study name, version) of a sweep's base spec, from its study tag; None if not a study."""
    for tag in base.get("tags") or []:
        if isinstance(tag, str) and tag.startswith(TAG_PREFIX) and "@v" in tag:
            name, _, version = tag[len(TAG_PREFIX) :].rpartition("@v")
            if version.isdigit():
                return name, int(version)
    return None


# -- results and verdicts ------------------------------------------------------------------
@dataclass(frozen=True)
class RunResult:
    """What a study needs of one run: its spec, whether it succeeded, and its per-round data."""

    spec: ExperimentSpec
    succeeded: bool
    acc: Sequence[float] = ()  # test_acc by round, round 0 first
    user_ms: Sequence[float] = ()  # time_user_ms of rounds >= 1


def verdict(ours: float, paper_ms: MeanStd | None, higher_is_better: bool = True) -> Verdict:
    """Ours vs the paper: within the paper's ±, better, worse; or why there is no verdict."""
    if paper_ms is None:
        return "no paper number"
    if ours is None or math.isnan(ours):
        return "no runs yet"
    pm, ps = paper_ms
    delta = ours - pm
    if abs(delta) <= ps + 1e-9:  # the paper's ± itself counts as within, despite float rounding
        return "within"
    return "better" if (delta > 0) == higher_is_better else "worse"


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else round(x, 4)


@dataclass(frozen=True)
class CellResult:
    """One cell: ours (mean ± std over n runs) beside the paper's, Δ and the verdict."""

    row: str
    column: str
    mean: float
    std: float
    n: int
    runs: int
    paper: MeanStd | None
    verdict: Verdict
    ratio: float = math.nan  # Table 3: ours / the reference row's mean
    ratio_std: float = math.nan
    paper_ratio: MeanStd | None = None

    @property
    def delta(self) -> float:
        """Ours − paper, in the statistic's unit (nan without both)."""
        return self.mean - self.paper[0] if self.paper else math.nan

    def to_dict(self) -> dict[str, Any]:
        """JSON form (NaN as null)."""
        out: dict[str, Any] = {
            "row": self.row,
            "column": self.column,
            "mean": _num(self.mean),
            "std": _num(self.std),
            "n": self.n,
            "runs": self.runs,
            "paper_mean": self.paper[0] if self.paper else None,
            "paper_std": self.paper[1] if self.paper else None,
            "delta": _num(self.delta),
            "verdict": self.verdict,
        }
        if self.paper_ratio is not None or not math.isnan(self.ratio):
            out |= {
                "ratio": _num(self.ratio),
                "ratio_std": _num(self.ratio_std),
                "paper_ratio": _num(self.paper_ratio[0]) if self.paper_ratio else None,
                "paper_ratio_std": _num(self.paper_ratio[1]) if self.paper_ratio else None,
            }
        return out


@dataclass(frozen=True)
class StudyTable:
    """A study's table for a set of runs."""

    study: Study
    dataset: str
    layout: Layout
    cells: list[CellResult]
    runs_total: int
    runs_done: int
    unmatched: int

    @property
    def unit(self) -> str:
        """ "%" or "ms"."""
        return "ms" if self.study.statistic == "ms_per_update" else "%"

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the API and the dashboard."""
        return {
            "study": self.study.name,
            "version": self.study.version,
            "dataset": self.dataset,
            "statistic": self.study.statistic,
            "statistic_text": self.study.statistic_text,
            "unit": self.unit,
            "rows": self.layout.rows.labels,
            "columns": self.layout.columns.labels,
            "runs_total": self.runs_total,
            "runs_done": self.runs_done,
            "unmatched": self.unmatched,
            "cells": [c.to_dict() for c in self.cells],
        }

    def markdown(self) -> str:
        """One line per cell: ours, paper, Δ and verdict (a table a terminal can show)."""
        u = self.unit
        ratio = self.layout.reference_row is not None
        head = "| row | column | ours | n | paper | Δ |" + (" ours ×ref | paper ×ref |" if ratio else "") + " verdict |"  # fmt: skip
        lines = [head, "|" + "---|" * (head.count("|") - 1)]
        for c in self.cells:
            ours = f"{c.mean:.2f} ± {c.std:.2f} {u}" if not math.isnan(c.mean) else "–"
            pub = f"{c.paper[0]:.2f} ± {c.paper[1]:.2f}" if c.paper else "–"
            delta = f"{c.delta:+.2f}" if not math.isnan(c.delta) else "–"
            extra = ""
            if ratio:
                r = f"{c.ratio:.3f} ± {c.ratio_std:.3f}" if not math.isnan(c.ratio) else "–"
                pr = f"{c.paper_ratio[0]:.3f} ± {c.paper_ratio[1]:.3f}" if c.paper_ratio else "–"
                extra = f" {r} | {pr} |"
            lines.append(
                f"| {c.row} | {c.column} | {ours} | {c.n}/{c.runs} | {pub} | {delta} |{extra} {c.verdict} |"
            )
        return "\n".join(lines) + "\n"


def _pm(x: MeanStd | None) -> str:
    return f"{x[0]:.2f} ± {x[1]:.2f}" if x else "–"


def paper_markdown(layout: Layout) -> str:
    """The paper's numbers as the study's rows x columns matrix ("–" where it has none)."""
    cols = layout.columns.labels
    lines = ["| | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for row in layout.rows.labels:
        cells = [_pm(layout.paper.get((row, c))) for c in cols]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell_value(study: Study, members: Sequence[RunResult]) -> tuple[float, float, int]:
    if study.statistic == "ms_per_update":
        # n counts finished runs only, as for accuracy: a failed or cancelled run's rounds are out.
        timed = [m for m in members if m.succeeded and m.user_ms]
        m, s = mean_std([v for r in timed for v in r.user_ms])
        return m, s, len(timed)
    done = [
        [100.0 * a for a in reported_curve(r.acc, resolve(r.spec).eval_timing)]
        for r in members
        if r.succeeded and r.acc
    ]
    m, s = pooled_top5(done)
    return m, s, len(done)


def study_table(study: Study | str, dataset: str, results: Sequence[RunResult]) -> StudyTable:
    """The study's table on `dataset` from runs (runs that fit no cell are counted, not used)."""
    s = get_study(study) if isinstance(study, str) else study
    layout = s.layout(dataset)
    by_cell: dict[tuple[str, str], list[RunResult]] = {}
    unmatched = 0
    for r in results:
        cell = layout.cell_of(r.spec)
        if cell is None:
            unmatched += 1
        else:
            by_cell.setdefault(cell, []).append(r)
    values = {
        (row, col): _cell_value(s, by_cell.get((row, col), []))
        for row in layout.rows.labels
        for col in layout.columns.labels
    }
    cells: list[CellResult] = []
    for (row, col), (m, sd, n) in values.items():
        pub = layout.paper.get((row, col))
        members = by_cell.get((row, col), [])
        if layout.reference_row is None:
            cells.append(CellResult(row, col, m, sd, n, len(members), pub, verdict(m, pub, s.higher_is_better)))  # fmt: skip
            continue
        ref_m = values[(layout.reference_row, col)][0]
        ref_pub = layout.paper.get((layout.reference_row, col))
        ratio = m / ref_m if ref_m and not math.isnan(ref_m) else math.nan
        ratio_sd = sd / ref_m if ref_m and not math.isnan(ref_m) else math.nan
        pub_ratio = (pub[0] / ref_pub[0], pub[1] / ref_pub[0]) if pub and ref_pub else None
        v: Verdict = (
            "reference"
            if row == layout.reference_row
            else verdict(ratio, pub_ratio, s.higher_is_better)
        )
        cells.append(CellResult(row, col, m, sd, n, len(members), pub, v, ratio, ratio_sd, pub_ratio))  # fmt: skip
    done = sum(1 for r in results if r.succeeded)
    return StudyTable(s, dataset, layout, cells, len(results), done, unmatched)
