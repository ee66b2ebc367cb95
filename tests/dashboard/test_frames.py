"""Pure conversions of API payloads: runs table, history merging, user bands, compare curves."""

from __future__ import annotations

import math

import numpy as np

from api.schemas.results import UsersPublic
from dashboard.frames import (
    any_active,
    compare_long,
    last_round,
    merge_history,
    runs_frame,
    user_band,
    users_frame,
    worst_users,
)


def test_runs_frame_columns() -> None:
    """Progress, algorithm, dataset, alpha and seed come out of the run and its spec."""
    # Prepare
    run = {"id": "r1", "status": "running", "current_round": 3, "rounds": 10,
           "spec": {"algorithm": {"name": "fedgen"}, "data": {"name": "mnist"},
                    "partition": {"alpha": 0.1}, "seed": 2}}  # fmt: skip
    # Execute
    df = runs_frame([run])
    # Assert
    row = df.iloc[0]
    assert (row.progress, row.algorithm, row.dataset, row.alpha, row.seed) == (
        "3/10",
        "fedgen",
        "mnist",
        0.1,
        2,
    )
    assert any_active([run])
    assert not any_active([{**run, "status": "failed"}])


def test_merge_history_appends_and_dedupes() -> None:
    """New rounds append; a re-sent round overwrites; late metrics are NaN-filled."""
    # Prepare
    hist = {"rounds": [0, 1], "metrics": {"test_acc": [0.1, 0.2]}}
    payload = {
        "rounds": [1, 2],
        "metrics": {"test_acc": [0.25, 0.3], "gen_teacher_loss": [1.0, 0.9]},
    }
    # Execute
    out = merge_history(hist, payload)
    # Assert
    assert out["rounds"] == [0, 1, 2]
    assert out["metrics"]["test_acc"] == [0.1, 0.25, 0.3]
    assert math.isnan(out["metrics"]["gen_teacher_loss"][0])
    assert last_round(out) == 2
    assert last_round(None) is None


def test_user_band_and_worst() -> None:
    """Min/mean/max per round and the lowest users of the last round."""
    # Prepare
    rows = [
        {
            "round": r,
            "user": u,
            "test_acc": 0.1 * (u + 1) + r,
            "test_loss": 0,
            "num_test": 1,
            "selected": True,
            "train_ms": 1,
            "train_loss": 1,
        }
        for r in (0, 1)
        for u in range(3)
    ]
    users = users_frame(UsersPublic.model_validate({"data": rows}))
    # Execute
    band = user_band(users)
    worst = worst_users(users, k=1)
    # Assert
    assert np.allclose(band["min"], [0.1, 1.1])
    assert np.allclose(band["max"], [0.3, 1.3])
    assert list(worst["user"]) == [0]
    assert list(worst["round"]) == [1]


def test_compare_long_wall_clock_with_downsampling() -> None:
    """Cumulative seconds count each kept point for the rounds since the previous one."""
    # Prepare
    payload = {"runs": [{"id": "a", "rounds": [0, 1, 3],
                         "metrics": {"test_acc": [0.1, 0.5, None], "time_total_ms": [1000, 1000, 2000]}}]}  # fmt: skip
    # Execute
    df = compare_long(payload)
    # Assert
    assert list(df["wall_s"]) == [1.0, 2.0, 6.0]
    assert math.isnan(df["value"].iloc[2])
    assert compare_long({"runs": []}).empty
