"""Studies' results: finished runs into the study's table, verdicts and markdown.

`study_table` groups runs by cell, computes ours (the study's statistic, mean ± std, n)
beside the paper's, Δ and a verdict (`verdict`); Table 3's cells also carry the ratio to
its reference row. `StudyTable.markdown` and `paper_markdown` are what a terminal shows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from fedgen.fidelity import resolve
from fedgen.spec import ExperimentSpec
from fedgen.stats import mean_std, pooled_top5, reported_curve
from fedgen.studies.layouts import Layout, MeanStd
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
        head = (
            "| row | column | ours | n | paper | Δ |"
            + (" ours ×ref | paper ×ref |" if ratio else "")
            + " verdict |"
        )
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
            cells.append(
                CellResult(
                    row, col, m, sd, n, len(members), pub, verdict(m, pub, s.higher_is_better)
                )
            )
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
        cells.append(
            CellResult(row, col, m, sd, n, len(members), pub, v, ratio, ratio_sd, pub_ratio)
        )
    done = sum(1 for r in results if r.succeeded)
    return StudyTable(s, dataset, layout, cells, len(results), done, unmatched)
