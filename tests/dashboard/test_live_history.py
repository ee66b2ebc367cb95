"""The Live page's history: rounds merged as they land, the per-user band and worst users."""

from __future__ import annotations

import math

import numpy as np

from dashboard.live_history import History, last_round, merge_history, user_band, worst_users
from fedgen_lab.frames import users_frame
from vocab.schemas.results import UsersPublic


def test_merge_history_appends_and_dedupes() -> None:
    """New rounds append; a re-sent round overwrites; late metrics are NaN-filled."""
    # Prepare
    hist = History(rounds=[0, 1], metrics={"test_acc": [0.1, 0.2]})
    payload = History(
        rounds=[1, 2],
        metrics={"test_acc": [0.25, 0.3], "gen_teacher_loss": [1.0, 0.9]},
    )
    # Execute
    out = merge_history(hist, payload)
    # Assert
    assert out.rounds == [0, 1, 2]
    assert out.metrics["test_acc"] == [0.1, 0.25, 0.3]
    assert math.isnan(out.metrics["gen_teacher_loss"][0])
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
