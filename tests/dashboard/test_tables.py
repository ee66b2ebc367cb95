"""Pure table logic: grouping, smoothing, aggregation, time-to-target, paper tables, PCA."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dashboard import paper
from dashboard.tables import (
    aggregate,
    ema,
    group_labels,
    pca_2d,
    summary_groups,
    table1_latex,
    table1_long,
    table1_matrix,
    table3_frame,
    time_to_target,
    timing_rows,
)


def _run(run_id: str, alg: str, seed: int, alpha: float = 0.1, **algo: object) -> dict[str, object]:
    return {"id": run_id, "spec": {"algorithm": {"name": alg, **algo}, "seed": seed,
                                   "data": {"name": "mnist"}, "partition": {"alpha": alpha},
                                   "local_steps": 20, "tags": [f"t{seed}"]}}  # fmt: skip


def test_group_labels_ignore_seed_and_own_params() -> None:
    """Seeds merge; FedGen-only parameters do not show up in the label."""
    # Prepare
    runs = [_run("a", "fedavg", 0), _run("b", "fedavg", 1),
            _run("c", "fedgen", 0, gen_batch_size=32), _run("d", "fedgen", 1, gen_batch_size=32)]  # fmt: skip
    # Execute
    labels = group_labels(runs)
    # Assert
    assert labels == {"a": "algorithm=fedavg", "b": "algorithm=fedavg", "c": "algorithm=fedgen",
                      "d": "algorithm=fedgen"}  # fmt: skip


def test_group_labels_chosen_fields() -> None:
    """Grouping by alpha only puts different algorithms together."""
    runs = [_run("a", "fedavg", 0, 0.1), _run("b", "fedgen", 0, 0.1), _run("c", "fedgen", 0, 1.0)]
    assert group_labels(runs, ["partition.alpha"]) == {
        "a": "alpha=0.1",
        "b": "alpha=0.1",
        "c": "alpha=1",
    }


def test_ema_debiased() -> None:
    """The first smoothed value equals the first point; NaNs pass through."""
    out = ema([1.0, math.nan, 3.0], 0.5)
    assert out[0] == 1.0
    assert math.isnan(out[1])
    assert out[2] == pytest.approx((0.25 + 1.5) / 0.75)


def test_aggregate_mean_std_and_time_to_target() -> None:
    """Mean ± population std per round; first round reaching the target per run."""
    # Prepare
    long = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "group": ["g"] * 4, "round": [0, 1, 0, 1],
                         "value": [0.2, 0.6, 0.4, 0.8], "wall_s": [1.0, 2.0, 1.0, 3.0]})  # fmt: skip
    # Execute
    agg = aggregate(long)
    ttt = time_to_target(long, 0.5)
    # Assert
    assert np.allclose(agg["mean"], [0.3, 0.7])
    assert np.allclose(agg["std"], [0.1, 0.1])
    row = ttt.iloc[0]
    assert (row.runs, row.reached, row.round_mean, row.seconds_mean) == (2, 2, 1.0, 2.5)
    assert time_to_target(long, 0.95).iloc[0].reached == 0


def test_table1_against_paper() -> None:
    """Cells sit beside the paper's numbers with the difference; the best mean is marked."""
    # Prepare
    groups = pd.DataFrame({"dataset": ["MNIST"] * 2, "setting": ["α=0.1"] * 2, "T": [20, 20],
                           "algorithm": ["fedavg", "fedgen"], "mean": [90.0, 94.0], "std": [0.5, 0.2],
                           "n": [3, 3]})  # fmt: skip
    # Execute
    long = table1_long(groups)
    text, mask = table1_matrix(long)
    tex = table1_latex(long)
    # Assert
    assert long["paper_mean"].tolist() == [90.16, 93.03]
    assert long["diff"].tolist() == pytest.approx([-0.16, 0.97])
    assert bool(mask.iloc[0]["FedGen"])
    assert not bool(mask.iloc[0]["FedAvg"])
    assert "94.00 ± 0.20 (paper 93.03" in text.iloc[0]["FedGen"]
    assert "\\textbf{94.00 $\\pm$ 0.20}" in tex
    assert "(90.16)" in tex


def test_paper_data_transcribed() -> None:
    """Spot checks of the transcription of Tables 1 and 3."""
    assert paper.TABLE1[paper.Setting("EMNIST", "α=1", 40)]["fedgen"] == (78.92, 0.73)
    assert paper.TABLE1[paper.Setting("CELEBA", "r=5/25", 20)]["fedensemble"] == (90.22, 0.31)
    assert paper.TABLE3_FEDGEN[128] == (60.06, 2.32)
    assert (
        paper.setting_of(
            {"data.name": "celeba", "users_per_round": 5, "partition.num_users": 10}
        ).setting
        == "r=5/10"
    )


def test_summary_groups_scales_to_percent() -> None:
    """Sweep-summary groups take their Table 1 row from a member's spec; fractions become %."""
    # Prepare
    summary = {"groups": [{"label": "x", "run_ids": ["a"], "n": 1, "n_succeeded": 1,
                           "top5_mean": 0.9, "top5_std": 0.01}]}  # fmt: skip
    # Execute
    df = summary_groups(summary, {"a": _run("a", "fedgen", 0)})
    # Assert
    assert df.iloc[0][["dataset", "setting", "T", "algorithm"]].tolist() == [
        "MNIST",
        "α=0.1",
        20,
        "fedgen",
    ]
    assert df.iloc[0]["mean"] == pytest.approx(90.0)
    assert df.iloc[0]["std"] == pytest.approx(1.0)


def test_table3_ratio_to_fedavg() -> None:
    """FedGen rows by B_G, each with its ratio to FedAvg beside the paper's ratio."""
    # Prepare
    payload = {"algorithms": [{"algorithm": "fedavg", "mean_ms": 10.0, "std_ms": 1.0, "n_runs": 2},
                              {"algorithm": "fedgen", "mean_ms": 13.0, "std_ms": 1.0, "n_runs": 2}],
               "fedgen_by_gen_batch_size": [{"gen_batch_size": 8, "mean_ms": 12.0, "std_ms": 1.0, "n_runs": 1},
                                            {"gen_batch_size": 64, "mean_ms": 14.0, "std_ms": 1.0, "n_runs": 1}]}  # fmt: skip
    # Execute
    t3 = table3_frame(timing_rows(payload))
    # Assert
    assert t3["row"].tolist() == ["FedAvg", "FedGen B_G=8", "FedGen B_G=64"]
    assert t3["ours_ratio"].tolist() == pytest.approx([1.0, 1.2, 1.4])
    assert t3["paper_ratio"].iloc[1] == pytest.approx(57.20 / 47.66)


def test_pca_2d_separates_clusters() -> None:
    """Two far-apart clusters split along the first component."""
    # Prepare
    rng = np.random.default_rng(0)
    z = np.vstack([rng.normal(0, 0.1, (20, 5)), rng.normal(5, 0.1, (20, 5))])
    # Execute
    p = pca_2d(z)
    # Assert
    assert p.shape == (40, 2)
    assert np.sign(p[:20, 0]).tolist() != np.sign(p[20:, 0]).tolist()
    assert pca_2d(np.zeros((0, 3))).shape == (0, 2)
