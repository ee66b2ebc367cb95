"""Pure frames for the Paper page: a study's results (GET /studies/{name}/results) as tables.

Ours and the paper's numbers as rows x columns matrices side by side, and one line per
cell with ours (mean ± the table's std, n), the seed std, the paper's, Δ and the verdict (a
tuned study: the values chosen by validation), and the cells' cost (`cost_frame`). Before a launch: which
datasets the live workers can load (`worker_offer.Offer`, as the Submit form says it), the
dataset to offer first, and the CPU-time estimate in words; after it, why its queued runs
wait (the API's waiting_reason). No Streamlit here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime, tzinfo
from typing import Any

import pandas as pd

from dashboard.run_state import waiting_for
from dashboard.sweep_tables import COST_LABELS, cost_text
from dashboard.times import local_time, parse_ts, relative
from dashboard.worker_offer import Offer
from vocab.run_status import TERMINAL, RunStatus
from vocab.schemas.runs import RunPublic
from vocab.schemas.studies import (
    LaunchedSweep,
    PaperCell,
    StudyCell,
    StudyRatioCell,
    StudyResults,
)
from vocab.schemas.sweeps import SweepPublic

VERDICT_COLORS = {
    "within": "#d8f0d8",
    "better": "#cde3ff",
    "worse": "#ffd6d6",
    "no paper number": "#eeeeee",
    "no runs yet": "#ffffff",
    "reference": "#eeeeee",
}


def progress(status_counts: dict[str, int], total: int) -> tuple[float, str]:
    """(fraction finished, "12/63 runs finished · 3 running · 48 queued"; failed and cancelled
    runs are counted as finished and named)."""
    done = sum(status_counts.get(s, 0) for s in TERMINAL)
    parts = [f"{done}/{total} runs finished"]
    parts += [
        f"{status_counts[s]} {s}"
        for s in (RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.FAILED, RunStatus.CANCELLED)
        if status_counts.get(s)
    ]
    return (done / total if total else 0.0), " · ".join(parts)


def status_counts(statuses: Iterable[str]) -> dict[str, int]:
    """Runs per status."""
    return dict(Counter(statuses))


def done(sweep: SweepPublic | LaunchedSweep) -> int:
    """How many of a launched sweep's runs have ended (its `status_counts`)."""
    return sum(sweep.status_counts.get(s, 0) for s in TERMINAL)


def sweep_label(sweep: SweepPublic | LaunchedSweep, now: datetime, tz: tzinfo) -> str:
    """A launched sweep for the picker: its name, when it was launched in words and the
    viewer's time, and its runs done out of all (`… · launched 5 min ago (14:03) · 4/12 done`)."""
    created = parse_ts(sweep.created_at)
    when = f"launched {relative(created, now)} ({local_time(created, tz, now)})" if created else ""
    parts = [sweep.name, when, f"{done(sweep)}/{sweep.count} done"]
    return " · ".join(p for p in parts if p)


def _ms(mean: float | None, std: float | None) -> str:
    return "–" if mean is None else f"{mean:.2f} ± {(std or 0.0):.2f}"


def paper_matrix(rows: list[str], columns: list[str], paper: list[PaperCell]) -> pd.DataFrame:
    """The paper's numbers as a rows x columns frame of "mean ± std" ("–": none)."""
    cells = {(p.row, p.column): _ms(p.mean, p.std) for p in paper}
    data = [[cells.get((r, c), "–") for c in columns] for r in rows]
    return pd.DataFrame(data, index=pd.Index(rows, name=""), columns=columns)


def paper_cells(results: StudyResults) -> list[PaperCell]:
    """The paper's number of each cell that has one."""
    return [
        PaperCell(row=c.row, column=c.column, mean=c.paper_mean, std=c.paper_std or 0.0)
        for c in results.cells
        if c.paper_mean is not None
    ]


def shown_std(results: StudyResults, cell: StudyCell) -> float | None:
    """The ± the table shows (`std_kind`): the study's official std, or the seed std."""
    return cell.seed_std if results.std_kind == "seed" else cell.std


def ours_matrix(results: StudyResults) -> pd.DataFrame:
    """Our numbers as a rows x columns frame of "mean ± std (n=k)" (± as `std_kind` says)."""
    rows, columns = results.rows, results.columns
    cells = {
        (c.row, c.column): f"{_ms(c.mean, shown_std(results, c))} (n={c.n})"
        if c.mean is not None
        else "–"
        for c in results.cells
    }
    data = [[cells.get((r, c), "–") for c in columns] for r in rows]
    return pd.DataFrame(data, index=pd.Index(rows, name=""), columns=columns)


def cells_frame(results: StudyResults) -> pd.DataFrame:
    """One line per cell: ours (mean ± the table's std), the other std, n, the paper's, Δ,
    (ratios,) (a tuned study: the chosen values out of its budget,) verdict."""
    ratio = any(isinstance(c, StudyRatioCell) for c in results.cells)
    seed = results.std_kind == "seed"
    other = "official std" if seed else "seed std"
    tuned = any(c.budget is not None for c in results.cells)
    out = []
    for c in results.cells:
        rec: dict[str, Any] = {
            "row": c.row,
            "column": c.column,
            "ours": _ms(c.mean, shown_std(results, c)),
            # The other std beside the one shown: the official one or the seed std.
            other: _sd(c.std if seed else c.seed_std),
            "n": f"{c.n}/{c.runs}",
            "paper": _ms(c.paper_mean, c.paper_std),
            "Δ": "–" if c.delta is None else f"{c.delta:+.2f}",
        }
        if ratio:
            r = c if isinstance(c, StudyRatioCell) else None
            rec["ours ÷ FedAvg"] = _ms(r.ratio, r.ratio_std) if r else "–"
            rec["paper ÷ FedAvg"] = _ms(r.paper_ratio, r.paper_ratio_std) if r else "–"
        if tuned:
            rec["chosen by validation"] = _chosen(c)
        rec["verdict"] = c.verdict
        out.append(rec)
    return pd.DataFrame(out)


def _sd(std: float | None) -> str:
    return "–" if std is None else f"{std:.2f}"


def _chosen(cell: StudyCell) -> str:
    """A tuned cell's choice: "algorithm.mu=0.01 (best of 3)" (the fields it has), or "–"."""
    if not cell.tuned:
        return "–" if cell.budget is None else f"none yet (of {cell.budget})"
    values = ", ".join(f"{f}={v:g}" for f, v in cell.tuned.items() if isinstance(v, int | float))
    return f"{values} (best of {cell.budget})"


def cost_frame(results: StudyResults) -> pd.DataFrame:
    """The cells' cost per run, "mean ± seed std" as the sweep tables write it (n: the runs
    it is over); "–" where no counted run reports it."""
    rows = []
    for c in results.cells:
        row: dict[str, Any] = {"row": c.row, "column": c.column, "n": c.n}
        for name, label in COST_LABELS.items():
            row[label] = cost_text(getattr(c, f"{name}_mean"), getattr(c, f"{name}_seed_std"))
        rows.append(row)
    return pd.DataFrame(rows, columns=["row", "column", "n", *COST_LABELS.values()])


def verdict_counts(results: StudyResults) -> dict[str, int]:
    """How many cells have each verdict."""
    return dict(Counter(str(c.verdict) for c in results.cells))


def verdict_style(value: Any) -> str:
    """CSS for a verdict cell."""
    color = VERDICT_COLORS.get(str(value))
    return f"background-color: {color}" if color else ""


def default_dataset(datasets: list[str], paper_dataset: str, offer: Offer | None) -> str:
    """The dataset the page offers first: the paper's when a live worker can load it (or
    nothing is known), else the first one some live worker has (the paper's if none has any)."""
    if offer is None or offer.reason(paper_dataset) is None:
        return paper_dataset
    return next((d for d in datasets if offer.reason(d) is None), paper_dataset)


def dataset_label(dataset: str, paper_dataset: str, offer: Offer | None) -> str:
    """A picker option: 'emnist-letters (the paper's) — no live worker has it'."""
    name = f"{dataset} (the paper's)" if dataset == paper_dataset else dataset
    reason = offer.reason(dataset) if offer is not None else None
    return name if reason is None else reason.replace(dataset, name, 1)


def launch_block(offer: Offer | None, dataset: str, runs: int) -> str | None:
    """Why a launch now would queue runs no live worker can start; None when one can (or
    nothing is known: no live worker of the queue yet, which the page says apart)."""
    if offer is None or offer.reason(dataset) is None:
        return None
    have = ", ".join(sorted(offer.datasets or ())) or "none"
    return (
        f"No live worker has {dataset}: its {runs} runs would wait in the queue until a worker "
        f"that can load {dataset} starts (the live {offer.queue} workers have: {have})."
    )


def waiting_note(runs: list[RunPublic]) -> str | None:
    """Why a study's queued runs do not start: `6 of 6 runs wait for a worker with dataset
    emnist-letters`, one clause per reason; None when no run waits for a missing worker."""
    reasons = Counter(waiting_for(r) for r in runs if r.waiting_reason)
    if not reasons:
        return None
    parts = [f"{n} of {len(runs)} runs wait for {what}" for what, n in reasons.most_common()]
    return (
        "; ".join(parts)
        + ". They start once such a worker is up (the Lab page lists the live workers)."
    )
