"""Runs page helpers: ETA from the run's own median round time, durations, readable times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dashboard import runs_view

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def _run(**kw: object) -> dict:
    return {"id": "r1", "spec": {"algorithm": {"name": "fedgen"}, "seed": 3}, **kw}


def test_eta_is_median_round_time_times_rounds_left() -> None:
    """Round 0 (evaluation only) is left out; one slow round does not move the median."""
    run = _run(status="running", rounds=10, current_round=4)
    ms = [50.0, 2000.0, 2000.0, 9000.0, 2000.0]
    assert runs_view.median_round_s(ms) == 2.0
    assert runs_view.eta_seconds(run, ms) == 12.0
    assert runs_view.eta_seconds(run, [50.0]) is None
    df = runs_view.table([run], NOW, UTC, {"r1": ms})
    assert df.loc[0, "ETA"] == "12 s (12:00)"


def test_durations_and_times_read_like_words() -> None:
    """Durations in s/min/h/d; timestamps relative plus the local wall-clock time."""
    assert runs_view.duration(42) == "42 s"
    assert runs_view.duration(185) == "3 min 05 s"
    assert runs_view.duration(7620) == "2 h 07 min"
    assert runs_view.duration(None) == "—"
    earlier = (NOW - timedelta(minutes=5)).isoformat()
    assert runs_view.when(earlier, NOW, runs_view.zone("Europe/Berlin")) == "5 min ago (12:55)"
    assert runs_view.when(None, NOW, UTC) == "—"
    assert runs_view.zone("Not/AZone") is UTC
    finished = _run(
        status="succeeded",
        started_at="2026-12-01T10:00:00",  # naive: UTC
        finished_at="2026-12-01T11:30:00+00:00",
    )
    assert runs_view.run_duration(finished, NOW) == "1 h 30 min"


def test_status_counts_in_lifecycle_order() -> None:
    """Counts follow queued, running, succeeded, failed, cancelled; empty statuses left out."""
    runs = [_run(status=s) for s in ["succeeded", "queued", "succeeded", "failed"]]
    counts = runs_view.status_counts(runs)
    assert list(counts.items()) == [("queued", 1), ("succeeded", 2), ("failed", 1)]
    assert runs_view.counts_line(counts) == "1 queued · 2 succeeded · 1 failed"
    assert runs_view.counts_line({}) == "no runs"


def test_waiting_for_says_which_worker_the_run_needs() -> None:
    """The API's waiting_reason as what the run waits for; an unknown wording is kept as is."""
    emnist = _run(
        status="queued",
        waiting_reason="no live worker has dataset emnist-letters",
        queue_position=1,
        expected_start=NOW.isoformat(),  # the API's estimate; the run cannot start, though
    )
    nobody = _run(status="queued", waiting_reason="no live worker serves the lab-gpu queue")
    other = _run(status="running", waiting_reason="the moon is in the wrong phase")
    assert runs_view.waiting_for(emnist) == "a worker with dataset emnist-letters"
    assert runs_view.waiting_for(nobody) == "a worker serving the lab-gpu queue"
    assert runs_view.waiting_for(other) == "the moon is in the wrong phase"
    assert runs_view.waiting_for(_run(status="queued", waiting_reason=None)) == "—"
    df = runs_view.table([emnist, _run(status="queued")], NOW, UTC)
    assert list(df["waiting for"]) == ["a worker with dataset emnist-letters", "—"]
    assert (df.loc[0, "queue"], df.loc[0, "expected start"]) == ("#1", "—")
    assert "waiting for" in runs_view.shown_columns(df)


def test_waiting_for_column_hidden_when_no_run_waits_for_a_worker() -> None:
    """The column is left out of the table when every run shown has a worker that can take it."""
    df = runs_view.table([_run(status="queued"), _run(status="succeeded")], NOW, UTC)
    shown = runs_view.shown_columns(df)
    assert "waiting for" not in shown
    assert shown == [c for c in runs_view.TABLE_COLUMNS if c not in ("waiting for", "error")]


def test_states_beyond_the_status_and_a_failed_runs_round() -> None:
    """claimed and cancelling are named; a failed run's error says the round it stopped at
    (before round 0 too), first line only; the error column shows only when a run failed."""
    claimed = _run(status="running", current_round=-1, rounds=10)
    cancelling = _run(status="running", current_round=4, rounds=10, cancel_requested=True)
    early = _run(
        status="failed", current_round=-1, error="mnist: dataset files not found. Searched: /x."
    )
    late = _run(
        status="failed",
        current_round=2,
        rounds=6,
        error="RuntimeError: boom\n\nTraceback (most recent call last):\n  File x\nRuntimeError",
    )
    assert [runs_view.state(r) for r in (claimed, cancelling, early)] == [
        "claimed", "cancelling", "failed",
    ]  # fmt: skip
    assert (
        runs_view.failure(early) == "before round 0: mnist: dataset files not found. Searched: /x."
    )
    assert runs_view.failure(late) == "in round 3 of 6: RuntimeError: boom"
    assert runs_view.failure(claimed) == "—"
    df = runs_view.table([claimed, cancelling, late], NOW, UTC)
    assert list(df["status"]) == ["claimed", "cancelling", "failed"]
    assert list(df["progress"]) == ["0/10", "4/10", "2/6"]
    assert "error" in runs_view.shown_columns(df)
    shown, total, recent = runs_view.recent_failures([early, claimed, late], NOW)
    assert (len(shown), total, recent) == (2, 2, True)
