"""What the Paper tables' CSVs hold: the numbers as the tables show them, in a stated unit.

Table 1's CSV has accuracies in percent with the unit in the header (`mean_pct`, `std_pct`,
`paper_mean_pct`, ...), Table 3's milliseconds (`ours_ms`) and ratios; both rounded to the
DECIMALS the tables show, so a float's binary noise (75.94800000000001) never reaches the file.
The sweep plot's CSV (`lab.plot_data.plot_csv`) uses the same unit and rounding. Each CSV has a
column per spec field that varies across its rows, named by the dotted path
(`partition.alpha`), so rows that read alike ("FedAvg") are told apart. No Streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from fedgen.specdict import format_value

#: Decimals of every number the Paper tables show (and so of their CSVs).
DECIMALS = 2
#: Table 1's columns (of `sweep_tables.table1_long`) -> the CSV's name, the unit said.
TABLE1_UNITS = {
    "mean": "mean_pct",
    "std": "std_pct",
    "paper_mean": "paper_mean_pct",
    "paper_std": "paper_std_pct",
    "diff": "diff_pct",
}
#: Spec fields Table 1 already has a column for (algorithm, dataset, T).
_TABLE1_SAID = frozenset({"algorithm.name", "data.name", "local_steps"})
#: Table 3's number columns, rounded as shown (their names carry the unit: ms, or a ratio).
TABLE3_NUMBERS = ("ours_ms", "ours_std", "ours_ratio", "paper_ms", "paper_std", "paper_ratio")


def varying_fields(fields: Iterable[Mapping[str, Any] | None]) -> list[str]:
    """The dotted fields whose values differ across the rows' field dicts (missing = None), in
    the order they first appear."""
    rows = [dict(f) if isinstance(f, Mapping) else {} for f in fields]
    names = list(dict.fromkeys(k for r in rows for k in r))
    return [k for k in names if len({format_value(r.get(k)) for r in rows}) > 1]


def _rounded(value: Any) -> Any:
    if isinstance(value, float | int) and not isinstance(value, bool):
        return None if math.isnan(value) else round(float(value), DECIMALS)
    return value


def table1_csv_frame(long: pd.DataFrame) -> pd.DataFrame:
    """Table 1 for the CSV: dataset, setting, T, algorithm, a column per other varying spec
    field, then mean_pct, std_pct, n, paper_mean_pct, paper_std_pct, diff_pct (percent, rounded
    to DECIMALS as the table shows them)."""
    fields = list(long["fields"]) if "fields" in long.columns else [{}] * len(long)
    varying = [f for f in varying_fields(fields) if f not in _TABLE1_SAID]
    rows = []
    for rec, own in zip(long.to_dict("records"), fields, strict=True):
        own = own if isinstance(own, Mapping) else {}
        row: dict[str, Any] = {c: rec.get(c) for c in ("dataset", "setting", "T", "algorithm")}
        row |= {f: own.get(f) for f in varying}
        for col in ("mean", "std", "n", "paper_mean", "paper_std", "diff"):
            name = TABLE1_UNITS.get(col, col)
            row[name] = int(rec[col]) if col == "n" else _rounded(rec.get(col))
        rows.append(row)
    head = ["dataset", "setting", "T", "algorithm", *varying]
    units = [TABLE1_UNITS.get(c, c) for c in ("mean", "std", "n", "paper_mean", "paper_std")]
    return pd.DataFrame(rows, columns=[*head, *units, "diff_pct"])


def table3_csv_frame(t3: pd.DataFrame) -> pd.DataFrame:
    """Table 3 for the CSV: its columns (a varying field's included) with ms and ratios rounded
    to DECIMALS, as the table shows them."""
    out = t3.copy()
    for col in TABLE3_NUMBERS:
        if col in out.columns:
            out[col] = [_rounded(v) for v in out[col]]
    return out
