"""Pure frames for the Paper page: a study's results (GET /studies/{name}/results) as tables.

Ours and the paper's numbers as rows x columns matrices side by side, and one line per
cell with ours (mean ± std, n), the paper's, Δ and the verdict. No Streamlit here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime, tzinfo
from typing import Any

import pandas as pd

from dashboard.runs_view import local_time, parse_ts, relative
from fedgen.status import TERMINAL

VERDICT_COLORS = {
    "within": "#d8f0d8",
    "better": "#cde3ff",
    "worse": "#ffd6d6",
    "no paper number": "#eeeeee",
    "no runs yet": "#ffffff",
    "reference": "#eeeeee",
}


def progress(status_counts: dict[str, int], total: int) -> tuple[float, str]:
    """(fraction finished, "12/63 runs finished · 3 running · 48 queued")."""
    done = sum(status_counts.get(s, 0) for s in TERMINAL)
    parts = [f"{done}/{total} runs finished"]
    parts += [f"{status_counts[s]} {s}" for s in ("running", "queued", "failed") if status_counts.get(s)]  # fmt: skip
    return (done / total if total else 0.0), " · ".join(parts)


def status_counts(statuses: Iterable[str]) -> dict[str, int]:
    """Runs per status."""
    return dict(Counter(statuses))


def done(sweep: dict[str, Any]) -> int:
    """How many of a launched sweep's runs have ended (its `status_counts`)."""
    counts = sweep.get("status_counts") or {}
    return sum(int(counts.get(s, 0)) for s in TERMINAL)


def sweep_label(sweep: dict[str, Any], now: datetime, tz: tzinfo) -> str:
    """A launched sweep for the picker: its name, when it was launched in words and the
    viewer's time, and its runs done out of all (`… · launched 5 min ago (14:03) · 4/12 done`)."""
    created = parse_ts(sweep.get("created_at"))
    when = f"launched {relative(created, now)} ({local_time(created, tz, now)})" if created else ""
    parts = [
        str(sweep.get("name") or sweep.get("sweep_id")),
        when,
        f"{done(sweep)}/{sweep.get('count', 0)} done",
    ]
    return " · ".join(p for p in parts if p)


def _ms(mean: float | None, std: float | None) -> str:
    return "–" if mean is None else f"{mean:.2f} ± {(std or 0.0):.2f}"


def paper_matrix(rows: list[str], columns: list[str], paper: list[dict[str, Any]]) -> pd.DataFrame:
    """The paper's numbers as a rows x columns frame of "mean ± std" ("–": none)."""
    cells = {(p["row"], p["column"]): _ms(p["mean"], p["std"]) for p in paper}
    data = [[cells.get((r, c), "–") for c in columns] for r in rows]
    return pd.DataFrame(data, index=pd.Index(rows, name=""), columns=columns)


def ours_matrix(results: dict[str, Any]) -> pd.DataFrame:
    """Our numbers as a rows x columns frame of "mean ± std (n=k)"."""
    rows, columns = results.get("rows") or [], results.get("columns") or []
    cells = {
        (c["row"], c["column"]): (
            f"{_ms(c['mean'], c['std'])} (n={c['n']})" if c["mean"] is not None else "–"
        )
        for c in results.get("cells") or []
    }
    data = [[cells.get((r, c), "–") for c in columns] for r in rows]
    return pd.DataFrame(data, index=pd.Index(rows, name=""), columns=columns)


def cells_frame(results: dict[str, Any]) -> pd.DataFrame:
    """One line per cell: ours (mean ± std), n, the paper's, Δ, (ratios,) verdict."""
    ratio = any("ratio" in c for c in results.get("cells") or [])
    out = []
    for c in results.get("cells") or []:
        rec: dict[str, Any] = {
            "row": c["row"],
            "column": c["column"],
            "ours": _ms(c["mean"], c["std"]),
            "n": f"{c['n']}/{c['runs']}",
            "paper": _ms(c["paper_mean"], c["paper_std"]),
            "Δ": "–" if c["delta"] is None else f"{c['delta']:+.2f}",
        }
        if ratio:
            rec["ours ÷ FedAvg"] = _ms(c.get("ratio"), c.get("ratio_std"))
            rec["paper ÷ FedAvg"] = _ms(c.get("paper_ratio"), c.get("paper_ratio_std"))
        rec["verdict"] = c["verdict"]
        out.append(rec)
    return pd.DataFrame(out)


def verdict_counts(results: dict[str, Any]) -> dict[str, int]:
    """How many cells have each verdict."""
    return dict(Counter(c["verdict"] for c in results.get("cells") or []))


def verdict_style(value: Any) -> str:
    """CSS for a verdict cell."""
    color = VERDICT_COLORS.get(str(value))
    return f"background-color: {color}" if color else ""
