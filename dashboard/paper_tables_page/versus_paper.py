"""Our Table 1 groups beside the paper's numbers, one line each (no Streamlit, no network).

Each line says the paper's value, Δ and whether ours lies within the paper's ± where the
paper reports that row, and says "no paper number" where it does not; n is an integer.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from vocab.run_names import algorithm_name

NO_PAPER = "no paper number"


def number(value: Any) -> float:
    """A float, NaN for None or text."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out


def versus_paper(long: pd.DataFrame) -> pd.DataFrame:
    """One line per group: ours, n (an integer), the paper's, Δ, and whether ours is within ±.

    A group whose dataset/setting the paper reports no number for says so instead of a Δ.
    """
    out = []
    for rec in long.to_dict("records"):
        pm, ps, mean = number(rec["paper_mean"]), number(rec["paper_std"]), number(rec["mean"])
        has_paper = not math.isnan(pm)
        within = "–"
        if has_paper and not math.isnan(mean):
            within = "yes" if abs(mean - pm) <= (0.0 if math.isnan(ps) else ps) else "no"
        out.append(
            {
                "dataset": rec["dataset"],
                "setting": rec["setting"],
                "T": int(rec["T"]),
                "algorithm": algorithm_name(rec["algorithm"]),
                "ours (%)": f"{mean:.2f} ± {number(rec['std']):.2f}",
                "n": int(rec["n"]) if not math.isnan(number(rec["n"])) else 0,
                "paper (%)": f"{pm:.2f} ± {ps:.2f}" if has_paper else NO_PAPER,
                "Δ (points)": f"{mean - pm:+.2f}" if has_paper else NO_PAPER,
                "within paper's ±": within,
            }
        )
    return pd.DataFrame(out)
