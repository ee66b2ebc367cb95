"""The Live page's pure helpers: SSE events to a metrics payload; charts in % and seconds."""

from __future__ import annotations

import pandas as pd

from dashboard import live_view
from dashboard.frames import metrics_frame


def _events() -> list[tuple[str, dict]]:
    return [
        (
            "round",
            {
                "round": 4,
                "metrics": {"test_acc": 0.5, "time_train_ms": 1000.0, "time_total_ms": 1500.0},
            },
        ),
        (
            "round",
            {
                "round": 5,
                "metrics": {
                    "test_acc": 0.625,
                    "gen_teacher_loss": 2.0,
                    "time_train_ms": 250.0,
                    "time_total_ms": 250.0,
                },
            },
        ),
        ("round", {"round": 6, "metrics": {"test_acc": 0.75}}),
        ("status", {"status": "running", "round": 5}),
        ("status", {"status": "succeeded", "round": 5}),
    ]


def test_events_payload_is_a_metrics_payload() -> None:
    """Round events become columns as GET /metrics returns them, missing values as None."""
    payload = live_view.events_payload(_events())
    assert payload["rounds"] == [4, 5, 6]
    assert payload["metrics"]["test_acc"] == [0.5, 0.625, 0.75]
    assert payload["metrics"]["gen_teacher_loss"] == [None, 2.0, None]
    assert live_view.last_status(_events()) == "succeeded"
    assert live_view.last_status([]) is None


def test_charts_use_percent_seconds_and_words() -> None:
    """Accuracy is drawn in %, phase times in seconds; generator losses apart from accuracy."""
    df = metrics_frame(live_view.events_payload(_events())).iloc[:2]
    df["gen_ensemble_acc"] = [0.25, 0.75]
    acc = live_view.accuracy_chart(df, "t")
    timing = live_view.timing_chart(df, "t")
    gen_loss = live_view.generator_loss_chart(df, "t")
    gen_acc = live_view.generator_acc_chart(df, "t")
    assert list(acc.data[0].y) == [50.0, 62.5]
    assert acc.data[0].name == "global model (test set)"
    assert "%" in acc.layout.yaxis.title.text
    assert list(timing.data[0].y) == [1.0, 0.25]  # local training
    assert list(timing.data[-1].y) == [0.5, 0.0]  # other: the rest of the round
    assert timing.layout.yaxis.title.text == "time per round (s)"
    assert [t.name for t in gen_loss.data] == ["teacher loss"]
    assert list(gen_acc.data[0].y) == [25.0, 75.0]
    assert live_view.has_generator(df)
    assert not live_view.has_generator(pd.DataFrame({"round": [0], "test_acc": [0.1]}))
