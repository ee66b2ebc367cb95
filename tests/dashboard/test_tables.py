"""Pure table logic: grouping, smoothing, aggregation, time-to-target, paper tables, PCA."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dashboard import sweep_tables
from dashboard.compare_page.compare_view import CachedRun
from dashboard.compare_page.curves import (
    aggregate,
    compare_long,
    ema,
    group_labels,
    group_warnings,
    n_changes,
    time_to_target,
    unfinished,
)
from dashboard.inspect_page.latents import pca_2d
from dashboard.sweep_tables import (
    statistic_label,
    summary_groups,
    table1_latex,
    table1_long,
    table1_matrix,
    table3_frame,
)
from dashboard.table1_row import setting_of
from fedgen import paper
from tests.support.factories import public_run, summary_group, sweep_summary, timing_table
from vocab.schemas.runs import RunPublic


def _run(run_id: str, alg: str, seed: int, alpha: float = 0.1, **algo: object) -> RunPublic:
    spec = {
        "algorithm": {"name": alg, **algo},
        "seed": seed,
        "data": {"name": "mnist"},
        "partition": {"alpha": alpha},
        "local_steps": 20,
        "tags": [f"t{seed}"],
    }
    return public_run(id=run_id, spec=spec)


def test_group_labels_ignore_seed_and_own_params() -> None:
    """Seeds merge; FedGen-only parameters do not show up in the label."""
    # Prepare
    runs = [
        _run("a", "fedavg", 0),
        _run("b", "fedavg", 1),
        _run("c", "fedgen", 0, gen_batch_size=32),
        _run("d", "fedgen", 1, gen_batch_size=32),
    ]
    # Execute
    labels = group_labels(runs)
    # Assert
    assert labels == {
        "a": "algorithm=fedavg",
        "b": "algorithm=fedavg",
        "c": "algorithm=fedgen",
        "d": "algorithm=fedgen",
    }


def test_group_labels_leave_unset_fields_out() -> None:
    """One run with data.root set names it; the others do not read "data.root=None"."""
    # Prepare
    runs = [_run("a", "fedavg", 0), _run("b", "fedgen", 0), _run("c", "fedgen", 0)]
    runs[0].spec["data"] = {"name": "mnist", "root": None}
    runs[1].spec["data"] = {"name": "mnist", "root": None}
    runs[2].spec["data"] = {"name": "mnist", "root": "/nowhere"}
    # Execute
    labels = group_labels(runs)
    # Assert
    assert labels["a"] == "algorithm=fedavg"
    assert labels["b"] == "algorithm=fedgen"
    assert labels["c"] == "algorithm=fedgen, data.root=/nowhere"


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
    """Mean ± population std per round; the median first round reaching the target."""
    # Prepare
    long = pd.DataFrame(
        {
            "run_id": ["a", "a", "b", "b"],
            "group": ["g"] * 4,
            "round": [0, 1, 0, 1],
            "value": [0.2, 0.6, 0.4, 0.8],
            "wall_s": [1.0, 2.0, 1.0, 3.0],
        }
    )
    # Execute
    agg = aggregate(long)
    ttt = time_to_target(long, 0.5)
    # Assert
    assert np.allclose(agg["mean"], [0.3, 0.7])
    assert np.allclose(agg["std"], [0.1, 0.1])
    row = ttt.iloc[0]
    assert (row.runs, row.reached, row.round_median, row.seconds_median) == (2, 2, 1.0, 2.5)
    assert row.reached_text == "2 of 2"
    assert not row.round_censored
    assert time_to_target(long, 0.95).iloc[0].reached == 0


def _long(curves: dict[str, tuple[str, list[float]]], group: str = "g") -> pd.DataFrame:
    rows = [
        {"run_id": rid, "group": group, "round": r, "value": v, "wall_s": float(r), "status": st}
        for rid, (st, vals) in curves.items()
        for r, v in enumerate(vals)
    ]
    return pd.DataFrame(rows)


def test_time_to_target_censors_seeds_that_never_reach() -> None:
    """1 of 5 seeds reaches 0.8 at round 3: "1 of 5", median "> 4", not the one seed's 3."""
    # Prepare
    low = [0.1, 0.2, 0.3, 0.4, 0.5]
    long = _long(
        {
            "a": ("succeeded", [0.1, 0.2, 0.5, 0.85, 0.9]),
            "b": ("succeeded", low),
            "c": ("succeeded", low),
            "d": ("succeeded", low),
            "e": ("succeeded", low),
            "f": ("running", [0.9, 0.95]),
        }
    )
    # Execute
    row = time_to_target(long, 0.8).iloc[0]
    # Assert
    assert row.reached_text == "1 of 5"
    assert row.runs == 5
    assert row.unfinished == 1  # the running seed reached 0.8 at round 0 and is not counted
    assert row.round_censored
    assert row.round_median == 4.0
    assert row.round_median_text == "> 4"
    assert row.seconds_median_text == "> 4.0"


def test_time_to_target_median_of_reached_when_most_reach() -> None:
    """3 of 4 reach (rounds 1, 2, 3), one never: the median (2 and 3) is 2.5, not censored."""
    # Prepare
    long = _long(
        {
            "a": ("succeeded", [0.0, 0.9]),
            "b": ("succeeded", [0.0, 0.0, 0.9]),
            "c": ("succeeded", [0.0, 0.0, 0.0, 0.9]),
            "d": ("succeeded", [0.0] * 4),
        }
    )
    # Execute
    row = time_to_target(long, 0.5).iloc[0]
    # Assert
    assert row.reached_text == "3 of 4"
    assert row.round_median == 2.5
    assert row.round_median_text == "2"  # "{:.0f}" of 2.5 rounds to even
    assert not row.round_censored


def test_aggregate_counts_running_runs_per_round_and_reports_n_changes() -> None:
    """Running runs join each round they reached; cancelled ones stay out; n is per round."""
    # Prepare
    long = _long(
        {
            "a": ("succeeded", [0.1, 0.2, 0.3, 0.4]),
            "b": ("succeeded", [0.3, 0.4]),
            "c": ("cancelled", [0.9, 0.9, 0.9, 0.9]),
            "d": ("running", [0.5]),
        }
    )
    # Execute
    agg = aggregate(long)
    changes = n_changes(agg)
    rest = unfinished(long)
    # Assert
    assert agg["n"].tolist() == [3, 2, 1, 1]
    assert agg["mean"].tolist() == pytest.approx([0.3, 0.3, 0.3, 0.4])
    assert changes[["round", "n"]].values.tolist() == [[0, 3], [1, 2], [2, 1]]
    assert dict(zip(rest["status"], rest["runs"], strict=True)) == {"cancelled": 1, "running": 1}


def test_time_to_target_counts_runs_without_rounds_as_not_finished() -> None:
    """A queued run has no rows: `members` still counts it under "not finished"."""
    # Prepare
    long = _long({"a": ("succeeded", [0.1, 0.9]), "b": ("running", [0.95])})
    members = pd.DataFrame(
        {
            "run_id": ["a", "b", "q"],
            "group": ["g"] * 3,
            "status": ["succeeded", "running", "queued"],
        }
    )
    # Execute
    row = time_to_target(long, 0.5, "group", members).iloc[0]
    # Assert
    assert (row.runs, row.reached, row.unfinished) == (1, 1, 2)


def test_statistic_label_names_the_round_when_not_the_last() -> None:
    """final @29 under the official protocol of 30 rounds; plain when it is the last round."""
    assert statistic_label("final", 29, 30) == "final @29"
    assert statistic_label("final", 30, 30) == "final"
    assert statistic_label("final", None, 30) == "final"
    assert statistic_label("best", 12, 30) == "best @12"
    assert statistic_label("top5", 29, 30) == "top-5 mean"


def test_groups_never_mix_datasets_or_profiles() -> None:
    """Default groups split on dataset and profile; chosen fields warn about what still differs."""
    # Prepare
    runs = [
        _run("a", "fedgen", 0),
        _run("b", "fedgen", 1),
        _run("c", "fedgen", 0),
        _run("d", "fedgen", 0),
    ]
    for r in runs:  # stored specs carry every default, the profile included
        r.spec["fidelity"] = {"profile": "official"}
    runs[2].spec["data"] = {"name": "fashion-mnist"}
    runs[3].spec["fidelity"] = {"profile": "paper"}
    # Execute
    labels = group_labels(runs)
    warned = group_warnings(runs, ["algorithm.name"])
    # Assert
    assert labels["a"] == labels["b"]
    assert len({labels["a"], labels["c"], labels["d"]}) == 3
    assert group_warnings(runs) == {}
    assert warned == {"all": ["data.name", "fidelity.profile"]}  # one algorithm: one group


def test_table1_against_paper() -> None:
    """Cells sit beside the paper's numbers with the difference; the best mean is marked."""
    # Prepare
    groups = pd.DataFrame(
        {
            "dataset": ["MNIST"] * 2,
            "setting": ["α=0.1"] * 2,
            "T": [20, 20],
            "algorithm": ["fedavg", "fedgen"],
            "mean": [90.0, 94.0],
            "std": [0.5, 0.2],
            "n": [3, 3],
        }
    )
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
        setting_of({"data.name": "celeba", "users_per_round": 5, "partition.num_users": 10}).setting
        == "r=5/10"
    )


def test_summary_groups_scales_to_percent() -> None:
    """Sweep-summary groups take their Table 1 row from a member's spec; fractions become %."""
    # Prepare
    group = summary_group(
        label="x",
        top5_mean=0.9,
        top5_std=0.01,
        final_mean=0.8,
        final_std=0.0,
        final_round=29,
        last_round=30,
    )
    summary = sweep_summary(group)
    # Execute
    df = summary_groups(summary, {"a": _run("a", "fedgen", 0)})
    final = summary_groups(summary, {"a": _run("a", "fedgen", 0)}, "final")
    # Assert
    assert df.iloc[0][["dataset", "setting", "T", "algorithm"]].tolist() == [
        "MNIST",
        "α=0.1",
        20,
        "fedgen",
    ]
    assert df.iloc[0]["mean"] == pytest.approx(90.0)
    assert df.iloc[0]["std"] == pytest.approx(1.0)
    assert df.iloc[0]["statistic"] == "top-5 mean"
    assert final.iloc[0]["mean"] == pytest.approx(80.0)
    assert final.iloc[0]["statistic"] == "final @29"


def test_table3_ratio_to_fedavg_of_the_same_setting() -> None:
    """FedGen rows by B_G, each with its ratio to the FedAvg row of its own setting."""

    # Prepare
    def row(alg: str, bg: int | None, ms: float, key: str, ds: str = "mnist") -> dict[str, object]:
        setting = {
            "data.name": ds,
            "model.name": "official-cnn",
            "batch_size": 32,
            "local_steps": 20,
            "users_per_round": 10,
            "device": "cpu",
        }
        return {
            "algorithm": alg,
            "gen_batch_size": bg,
            "mean_ms": ms,
            "std_ms": 1.0,
            "n": 2,
            "setting": setting,
            "setting_key": key,
        }

    payload = timing_table(
        row("fedavg", None, 10.0, "k1"),
        row("fedgen", 8, 12.0, "k1"),
        row("fedgen", 64, 14.0, "k1"),
        row("fedgen", 8, 5.0, "k2", "synthetic"),
    )
    # Execute
    t3 = table3_frame(payload)
    # Assert
    assert t3["row"].tolist() == ["FedAvg", "FedGen B_G=8", "FedGen B_G=64", "FedGen B_G=8"]
    assert t3["ours_ratio"].tolist()[:3] == pytest.approx([1.0, 1.2, 1.4])
    assert math.isnan(t3["ours_ratio"].iloc[3])  # no FedAvg measured on the synthetic setting
    assert t3["setting"].iloc[3].startswith("synthetic")
    assert t3["n"].tolist() == [2, 2, 2, 2]
    assert t3["paper_ratio"].iloc[1] == pytest.approx(57.20 / 47.66)


def test_summary_groups_keep_groups_that_share_a_table1_cell_apart() -> None:
    """Two profiles of one algorithm are two Table 1 rows, both beside the paper's number."""
    # Prepare
    summary = sweep_summary(
        summary_group(
            label="fidelity.profile=official",
            run_ids=["a"],
            n=3,
            top5_mean=0.9,
            top5_std=0.01,
            fields={"fidelity.profile": "official"},
        ),
        summary_group(
            label="fidelity.profile=paper",
            run_ids=["b"],
            n=2,
            top5_mean=0.8,
            top5_std=0.01,
            fields={"fidelity.profile": "paper"},
        ),
    )
    runs = {"a": _run("a", "fedgen", 0), "b": _run("b", "fedgen", 0)}
    # Execute
    df = summary_groups(summary, runs)
    long = table1_long(df)
    # Assert
    assert df["setting"].tolist() == [
        "α=0.1 [fidelity.profile=official]",
        "α=0.1 [fidelity.profile=paper]",
    ]
    assert df["n"].tolist() == [3, 2]
    assert long["paper_mean"].tolist() == [93.03, 93.03]


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


def test_noisy_timing_is_flagged_by_its_coefficient_of_variation() -> None:
    """Rows whose std is above NOISY_CV of their mean are named with their CV; steady ones not."""
    # Prepare
    t3 = pd.DataFrame(
        [
            {"row": "FedAvg", "ours_ms": 10.0, "ours_std": 3.0},
            {"row": "FedGen B_G=32", "ours_ms": 12.0, "ours_std": 0.5},
        ]
    )
    # Execute
    warning = sweep_tables.noisy_timing(t3)
    steady = sweep_tables.noisy_timing(t3.iloc[1:])
    # Assert
    assert warning is not None
    assert "FedAvg (CV 30%)" in warning
    assert "FedGen" not in warning
    assert f"more than {100 * sweep_tables.NOISY_CV:.0f}%" in warning
    assert steady is None


def test_compare_long_wall_clock_with_downsampling() -> None:
    """Cumulative seconds count each kept point for the rounds since the previous one."""
    # Prepare
    run = CachedRun(
        "a",
        rounds=[0, 1, 3],
        metrics={"test_acc": [0.1, 0.5, None], "time_total_ms": [1000, 1000, 2000]},
    )
    # Execute
    df = compare_long([run])
    # Assert
    assert list(df["wall_s"]) == [1.0, 2.0, 6.0]
    assert math.isnan(df["value"].iloc[2])
    assert compare_long([]).empty
