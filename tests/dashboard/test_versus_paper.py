"""Our Table 1 groups beside the paper: Δ and 'within ±' where the paper has the row, a note
where it has none, n as an integer; the Sweep tables page shows that table."""

from __future__ import annotations

from typing import Any

import pandas as pd

from dashboard.paper_tables_page.versus_paper import NO_PAPER, versus_paper
from tests.support.apptest import open_page


def _long(rows: list[tuple[str, str, float, float, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "dataset": d,
                "setting": "α=0.05",
                "T": 20,
                "algorithm": a,
                "mean": m,
                "std": 1.0,
                "n": n,
                "paper_mean": pm,
                "paper_std": 0.74,
            }
            for d, a, m, n, pm, _ in rows
        ]
    )


def test_paper_value_delta_and_within() -> None:
    """MNIST FedGen (paper 91.30 ± 0.74): 91.80 is within, 89.00 is not; synthetic has none."""
    nan = float("nan")
    long = _long(
        [
            ("MNIST", "fedgen", 91.8, 3.0, 91.3, 0),
            ("MNIST", "fedgen", 89.0, 2.0, 91.3, 0),
            ("synthetic", "fedgen", 80.0, 3.0, nan, 0),
        ]
    )
    out = versus_paper(long)
    assert list(out["paper (%)"]) == ["91.30 ± 0.74", "91.30 ± 0.74", NO_PAPER]
    assert list(out["Δ (points)"]) == ["+0.50", "-2.30", NO_PAPER]
    assert list(out["within paper's ±"]) == ["yes", "no", "–"]
    assert list(out["n"]) == [3, 2, 3]
    assert out["n"].dtype.kind == "i"


def test_sweep_tables_page_says_no_paper_number(app_path: str, lab_env: dict[str, Any]) -> None:
    """The seeded synthetic sweep: the paper has no row, and the page says so; n is an int."""
    at = open_page(app_path, "app_pages/paper_tables.py")
    at.selectbox(key="tables_sweep").set_value(lab_env["sweep_id"]).run()
    assert not at.exception
    vs = next(d.value for d in at.dataframe if "within paper's ±" in d.value.columns)
    assert set(vs["paper (%)"]) == {NO_PAPER}
    assert list(vs["n"]) == [2, 2]
    matrix = at.dataframe[0].value
    assert all(NO_PAPER in str(v) for v in matrix.to_numpy().ravel() if v)
