"""The demo's closing summary: accuracy in %, the final round named, missing figures as '-'."""

from __future__ import annotations

from scripts.demo import summary_table


def test_summary_table_is_percent_with_final_round() -> None:
    groups = [
        {"label": "algorithm.name=fedgen", "n": 3, "final_mean": 0.8, "final_std": 0.013,
         "final_round": 29, "top5_mean": 0.8123, "top5_std": 0.004},
        {"label": "algorithm.name=fedavg", "n": 0, "final_mean": None, "final_std": None,
         "final_round": None, "top5_mean": None, "top5_std": None},
    ]  # fmt: skip
    lines = summary_table(groups).splitlines()
    assert "mean ± std" in lines[0]
    fedgen = next(line for line in lines if "fedgen" in line)
    assert "80.0 ± 1.3 (29)" in fedgen
    assert "81.2 ± 0.4" in fedgen
    fedavg = next(line for line in lines if "fedavg" in line)
    assert fedavg.split()[1:] == ["0", "-", "-"]
