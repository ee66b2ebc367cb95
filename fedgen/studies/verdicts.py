"""Studies' results: finished runs into the study's table, verdicts and markdown.

`study_table` groups runs by cell, computes ours (the study's statistic, mean ± std, n)
beside the paper's, Δ and a verdict (`verdict`); Table 3's cells also carry the ratio to
its reference row. Every cell also carries the seed std (ddof 1 over each seed's own
figure, `fedgen.stats.seed_std`) beside the study's official std, and the cost columns of
its runs (`fedgen.cost.cost_columns`, the sweep summary's). A tuned study's cell reports
the configuration of its grid with the best mean validation figure (`_tune`).
`StudyTable.markdown` and `paper_markdown` are what a terminal shows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from fedgen.cost import COST_TOTALS, cost_columns
from fedgen.fidelity import resolve
from fedgen.spec import ExperimentSpec
from fedgen.specdict import value_order
from fedgen.stats import (
    mean_std,
    pooled_top5,
    reported_curve,
    seed_std,
    val_best,
    validation_statistic,
)
from fedgen.studies.layouts import Layout, MeanStd, _flatten
from fedgen.studies.registry import Study, get_study

Verdict = Literal["within", "better", "worse", "no paper number", "no runs yet", "reference"]
VERDICTS: tuple[str, ...] = (
    "within",
    "better",
    "worse",
    "no paper number",
    "no runs yet",
    "reference",
)


@dataclass(frozen=True)
class RunResult:
    """What a study needs of one run: its spec, whether it succeeded, and its per-round data."""

    spec: ExperimentSpec
    succeeded: bool
    acc: Sequence[float] = ()  # test_acc by round, round 0 first
    user_ms: Sequence[float] = ()  # time_user_ms of rounds >= 1
    val: Sequence[float] = ()  # val_acc by round (NaN where none; empty without validation)
    cost: Mapping[str, float] | None = None  # fedgen.cost.run_cost of its rounds


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


COST_COLUMNS: tuple[str, ...] = tuple(f"{c}_{s}" for c in COST_TOTALS for s in ("mean", "seed_std"))


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
    seed_std: float = math.nan  # ddof 1 over each seed's own figure; NaN under 2 seeds
    costs: Mapping[str, float | None] = field(default_factory=dict)  # cost_columns
    tuned: Mapping[str, Any] | None = None  # a tuned cell: the values chosen by validation
    budget: int | None = None  # a tuned cell: the configurations it chose among

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
            "seed_std": _num(self.seed_std),
            "n": self.n,
            "n_seeds": self.n,
            "runs": self.runs,
            "paper_mean": self.paper[0] if self.paper else None,
            "paper_std": self.paper[1] if self.paper else None,
            "delta": _num(self.delta),
            "verdict": self.verdict,
            **{k: self.costs.get(k) for k in COST_COLUMNS},
            "tuned": dict(self.tuned) if self.tuned is not None else None,
            "budget": self.budget,
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
            "std_kind": self.study.table_std,
            "std_text": self.study.std_text,
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
        tuned = bool(self.layout.tuned)
        head = (
            "| row | column | ours | n | paper | Δ |"
            + (" ours ×ref | paper ×ref |" if ratio else "")
            + (" chosen by validation |" if tuned else "")
            + " verdict |"
        )
        lines = [head, "|" + "---|" * (head.count("|") - 1)]
        for c in self.cells:
            sd = c.seed_std if self.study.table_std == "seed" else c.std
            # One seed has no seed std: the mean alone (n says how many runs it counts).
            pm = "" if math.isnan(sd) else f" ± {sd:.2f}"
            ours = f"{c.mean:.2f}{pm} {u}" if not math.isnan(c.mean) else "–"
            pub = f"{c.paper[0]:.2f} ± {c.paper[1]:.2f}" if c.paper else "–"
            delta = f"{c.delta:+.2f}" if not math.isnan(c.delta) else "–"
            extra = ""
            if ratio:
                r = f"{c.ratio:.3f} ± {c.ratio_std:.3f}" if not math.isnan(c.ratio) else "–"
                pr = f"{c.paper_ratio[0]:.3f} ± {c.paper_ratio[1]:.3f}" if c.paper_ratio else "–"
                extra = f" {r} | {pr} |"
            if tuned:
                extra += f" {_chosen(c)} |"
            lines.append(
                f"| {c.row} | {c.column} | {ours} | {c.n}/{c.runs} | {pub} | {delta} |{extra} {c.verdict} |"
            )
        return "\n".join(lines) + "\n"


def _chosen(cell: CellResult) -> str:
    """A tuned cell's chosen values (the fields its method tunes) out of its budget."""
    if not cell.tuned:
        return "–"
    values = ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in cell.tuned.items()
        if v is not None
    )
    return f"{values} (best of {cell.budget})"


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


@dataclass(frozen=True)
class _Value:
    """A cell's figures: mean ± std (the study's), the seed std, and the runs they count."""

    mean: float
    std: float
    seed_std: float
    counted: list[RunResult]


def _cell_value(study: Study, members: Sequence[RunResult]) -> _Value:
    if study.statistic == "ms_per_update":
        # n counts finished runs only, as for accuracy: a failed or cancelled run's rounds are out.
        timed = [m for m in members if m.succeeded and m.user_ms]
        m, s = mean_std([v for r in timed for v in r.user_ms])
        per_seed = [mean_std(r.user_ms)[0] for r in timed]
        return _Value(m, s, seed_std(per_seed), timed)
    done = [r for r in members if r.succeeded and r.acc]
    if study.statistic == "val_best":
        # Runs without validation data have no val_best: they are not counted (n_val_best).
        scored = [(r, 100.0 * val_best(r.acc, r.val, resolve(r.spec).eval_timing)[0]) for r in done]
        scored = [(r, v) for r, v in scored if not math.isnan(v)]
        values = [v for _, v in scored]
        m, s = mean_std(values)
        return _Value(m, s, seed_std(values), [r for r, _ in scored])
    curves = [[100.0 * a for a in reported_curve(r.acc, resolve(r.spec).eval_timing)] for r in done]
    m, s = pooled_top5(curves)
    per_seed = [pooled_top5([c])[0] for c in curves]
    return _Value(m, s, seed_std(per_seed), done)


def _tune(
    study: Study, members: Sequence[RunResult], tuned: Sequence[str]
) -> tuple[list[RunResult], dict[str, Any] | None, int]:
    """The runs of the cell's configuration (the values of `tuned`) with the best mean
    validation figure (`fedgen.stats.validation_statistic` of the study's statistic over its
    finished runs; ties: the first in grid order), those values and the number of
    configurations; no run and None when none has a validation figure yet."""
    if study.statistic == "ms_per_update":
        raise ValueError(f"study {study.name}: ms_per_update cannot be tuned by validation")
    configs: dict[tuple[Any, ...], list[RunResult]] = {}
    for m in members:
        flat = _flatten(m.spec.model_dump(mode="json"))
        configs.setdefault(tuple(flat.get(f) for f in tuned), []).append(m)
    best: tuple[Any, ...] | None = None
    best_val = -math.inf
    for key in sorted(configs, key=value_order):
        vals = [
            validation_statistic(r.val, study.statistic, resolve(r.spec).eval_timing)
            for r in configs[key]
            if r.succeeded and r.acc
        ]
        present = [v for v in vals if not math.isnan(v)]
        if present and (mean := sum(present) / len(present)) > best_val:
            best, best_val = key, mean
    if best is None:
        return [], None, len(configs)
    # Name only what the cell's configurations differ in (FedProx tunes μ at the one lr every
    # method keeps: its choice is μ, not "lr=0.01, μ=…"); a lone configuration names its all.
    varied = [i for i in range(len(tuned)) if len({key[i] for key in configs}) > 1]
    shown = varied or range(len(tuned))
    return configs[best], {tuned[i]: best[i] for i in shown}, len(configs)


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
    # A cell's runs: every run that fits it (a tuned cell: over all its configurations).
    runs_of = {cell: len(members) for cell, members in by_cell.items()}
    chosen: dict[tuple[str, str], tuple[dict[str, Any] | None, int]] = {}
    if layout.tuned:
        for cell, members in by_cell.items():
            best, picked, budget = _tune(s, members, layout.tuned)
            by_cell[cell], chosen[cell] = best, (picked, budget)
    values = {
        (row, col): _cell_value(s, by_cell.get((row, col), []))
        for row in layout.rows.labels
        for col in layout.columns.labels
    }
    cells: list[CellResult] = []
    for (row, col), v in values.items():
        pub = layout.paper.get((row, col))
        m, sd, n = v.mean, v.std, len(v.counted)
        extra: dict[str, Any] = {
            "seed_std": v.seed_std,
            "costs": cost_columns([r.cost for r in v.counted if r.cost is not None]),
        }
        if layout.tuned:
            picked, budget = chosen.get((row, col), (None, 0))
            extra |= {"tuned": picked, "budget": budget}
        runs = runs_of.get((row, col), 0)
        if layout.reference_row is None:
            cells.append(
                CellResult(
                    row, col, m, sd, n, runs, pub, verdict(m, pub, s.higher_is_better), **extra
                )
            )
            continue
        ref_m = values[(layout.reference_row, col)].mean
        ref_pub = layout.paper.get((layout.reference_row, col))
        ratio = m / ref_m if ref_m and not math.isnan(ref_m) else math.nan
        ratio_sd = sd / ref_m if ref_m and not math.isnan(ref_m) else math.nan
        pub_ratio = (pub[0] / ref_pub[0], pub[1] / ref_pub[0]) if pub and ref_pub else None
        verdict_: Verdict = (
            "reference"
            if row == layout.reference_row
            else verdict(ratio, pub_ratio, s.higher_is_better)
        )
        cells.append(
            CellResult(row, col, m, sd, n, runs, pub, verdict_, ratio, ratio_sd, pub_ratio, **extra)
        )
    done = sum(1 for r in results if r.succeeded)
    return StudyTable(s, dataset, layout, cells, len(results), done, unmatched)
