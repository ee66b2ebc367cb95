"""The Live page's pure helpers: SSE events to a metrics payload; charts in % and seconds."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from dashboard import live_view, run_failures
from dashboard.live_history import metrics_frame
from fedgen.resources import format_bytes
from tests.support.factories import public_run
from vocab.schemas.runs import DataFile, RunInfoPublic, Segment


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
    assert payload.rounds == [4, 5, 6]
    assert payload.metrics["test_acc"] == [0.5, 0.625, 0.75]
    assert payload.metrics["gen_teacher_loss"] == [None, 2.0, None]
    assert live_view.last_status(_events()) == "succeeded"
    assert live_view.last_status([]) is None


def test_charts_use_percent_seconds_and_words() -> None:
    """Accuracy is drawn in %, phase times in seconds; generator losses apart from accuracy."""
    df = metrics_frame(live_view.events_payload(_events())).iloc[:2]
    df["gen_ensemble_acc"] = [0.25, 0.75]
    acc = live_view.live_chart(df, "accuracy", "t")
    timing = live_view.live_chart(df, "timing", "t")
    gen_loss = live_view.live_chart(df, "generator_loss", "t")
    gen_acc = live_view.live_chart(df, "generator_acc", "t")
    assert list(acc.data[0].y) == [50.0, 62.5]
    assert acc.data[0].name == "global model (test set)"
    assert "%" in acc.layout.yaxis.title.text
    assert list(timing.data[0].y) == [1.0, 0.25]  # local training
    assert list(timing.data[-1].y) == [0.5, 0.0]  # other: the rest of the round
    assert timing.layout.yaxis.title.text == "time per round (s)"
    assert [t.name for t in gen_loss.data] == ["generator teacher loss"]  # fedgen.metric_names
    assert list(gen_acc.data[0].y) == [25.0, 75.0]
    assert live_view.has_data(df, "generator_loss")
    assert not live_view.has_data(pd.DataFrame({"round": [0], "test_acc": [0.1]}), "generator_acc")


def _segment(**kw: object) -> Segment:
    fields = {
        "attempt": 1,
        "worker": "cpu-slot0@w1",
        "host": "w1",
        "slot": "cpu-slot0",
        "code_version": "git:0123456789abcdef0123456789abcdef01234567+dirty",
        "device": "cpu",
        "start_round": 0,
        "last_round": 9,
        "resumed_from": None,
        "started_at": "2026-12-01T11:00:00+00:00",
        "fedgen": "0.1",
        "torch": "2.5.1",
        "torch_threads": "2",
        "cpu_capability": "AVX2",
    }
    return Segment.model_validate({**fields, **kw})


NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def test_segments_table_says_where_each_part_ran() -> None:
    """One row per segment: host, slot, rounds first-last, the checkpoint resumed from."""
    segments = [
        _segment(),
        _segment(
            attempt=2,
            worker="cpu-slot1@w2",
            host="w2",
            slot="cpu-slot1",
            start_round=10,
            last_round=None,
            resumed_from=9,
            torch_threads="1",
            started_at="2026-12-01T11:55:00+00:00",
        ),
    ]
    df = live_view.segments_frame(segments, NOW, UTC)
    assert list(df.columns) == live_view.SEGMENT_COLUMNS
    assert list(df["host"]) == ["w1", "w2"]
    assert list(df["slot"]) == ["cpu-slot0", "cpu-slot1"]
    assert list(df["rounds"]) == ["0–9", "from 10 (none done yet)"]
    assert list(df["resumed from"]) == ["fresh start", "round 9's checkpoint"]
    assert list(df["code version"]) == ["git:0123456789ab+dirty"] * 2
    assert list(df["torch threads"]) == ["2", "1"]
    assert list(df["cpu capability"]) == ["AVX2", "AVX2"]
    assert df.loc[1, "started"] == "5 min ago (11:55)"
    assert live_view.rounds_text(_segment(start_round=4, last_round=4)) == "4"
    no_host = live_view.segments_frame([_segment(host=None, slot=None, torch=None)], NOW, UTC)
    assert (no_host.loc[0, "host"], no_host.loc[0, "slot"]) == ("—", "cpu-slot0@w1")


def test_resume_caption_only_for_a_resumed_run() -> None:
    """`Resumed on w2 (cpu-slot1) from round 9's checkpoint.`; none for one segment."""
    first = _segment()
    second = _segment(host="w2", slot="cpu-slot1", start_round=10, resumed_from=9)
    assert live_view.resume_caption([first]) is None
    assert live_view.resume_caption([first, second]) == (
        "Resumed on w2 (cpu-slot1) from round 9's checkpoint."
    )
    crashed_late = _segment(last_round=12)  # rounds 10-12 were done, then lost with the worker
    assert live_view.resume_caption([crashed_late, second]) == (
        "Resumed on w2 (cpu-slot1) from round 9's checkpoint (rounds 10–12 computed again)."
    )
    assert live_view.resume_caption([_segment(last_round=10), second]).endswith(
        "(round 10 computed again)."
    )
    third = _segment(
        host="w3", slot=None, start_round=0, resumed_from=None, code_version="src:fedcba9876543210"
    )
    middle = second.model_copy(update={"last_round": 14})
    assert live_view.resume_caption([first, middle, third]) == (
        "Resumed 2 times, last on w3 started again from round 0 (rounds 0–14 computed again). "
        "The code changed between segments (2 versions)."
    )
    assert live_view.segments_label([first]) == "Where it ran: w1 (cpu-slot0)"
    assert live_view.segments_label([first, second, third]) == (
        "Where it ran: 3 segments on w1, w2, w3"
    )


def test_numerics_waiting_and_notices() -> None:
    """A change of numerics on resume, why a queued run waits, a hand-back notice."""
    versions = {"numerics_changed": [{"round": 10, "torch_threads": ["2", "1"]}]}
    note = live_view.numerics_note(versions)
    assert note is not None
    assert note.startswith("Numerics changed on resume (at round 10: torch threads 2 → 1)")
    assert live_view.numerics_note({"torch": "2.5"}) is None
    assert live_view.numerics_note(None) is None
    queued = public_run(waiting_reason="no live worker has dataset emnist-letters")
    assert live_view.waiting_note(queued) == (
        "Waiting: no live worker has dataset emnist-letters. It starts when a worker that can "
        "run it is up (see the Lab page)."
    )
    assert live_view.waiting_note(public_run(status="cancelled", waiting_reason="x")) is None
    assert live_view.waiting_note(public_run(waiting_reason=None)) is None
    handed = public_run(error="worker X could not load dataset mnist: gone")
    assert live_view.notice(handed) == "worker X could not load dataset mnist: gone"
    assert live_view.notice(public_run(status="failed", error="boom")) is None


def test_headline_says_each_state() -> None:
    """The bar's text names claimed and cancelling, and where a failed or cancelled run stopped."""
    run = public_run(rounds=30, worker="w1@host", queue_position=2)
    assert live_view.headline(run, "queued", -1) == "queued · #2 in the queue"
    assert live_view.headline(run, "running", -1).startswith("claimed by w1@host")
    assert live_view.headline(run, "running", 4) == "running · round 4 of 30"
    cancelling = run.model_copy(update={"cancel_requested": True})
    assert live_view.headline(cancelling, "running", 4).startswith("cancelling")
    assert live_view.headline(run, "failed", -1) == "failed before round 0"
    assert live_view.headline(run, "failed", 2) == "failed in round 3 of 30"
    assert live_view.headline(run, "cancelled", 9) == "cancelled in round 10 of 30"
    assert live_view.headline(run, "succeeded", 30) == "succeeded · round 30 of 30"


def test_state_notes_and_a_workers_error() -> None:
    """A queued run says it switches by itself; the error's traceback is kept apart."""
    now = datetime(2025, 1, 1, tzinfo=UTC)
    queued = public_run(queue_position=1)
    assert "switches to the curves by itself" in (
        live_view.state_note(queued, "queued", now, UTC) or ""
    )
    assert live_view.state_note(public_run(current_round=3), "succeeded", now, UTC) is None
    assert "failed before round 0" in live_view.no_rounds_note(public_run(), "failed")
    message, trace = run_failures.split_error(
        "RuntimeError: x\n\nTraceback (most recent call last):\n y"
    )
    assert (message, trace) == ("RuntimeError: x", "Traceback (most recent call last):\n y")
    assert run_failures.split_error("mnist: dataset files not found.") == (
        "mnist: dataset files not found.",
        None,
    )
    assert "no longer exists" in live_view.gone_note("abc")


def test_accuracy_figures_final_and_best_in_the_one_meaning() -> None:
    """In flight: the latest round and the best so far with its round; finished: final and
    best under the run's protocol (before_training leaves round R out: '… @2')."""
    df = pd.DataFrame({"round": [0, 1, 2, 3], "test_acc": [0.1, 0.5, 0.7, 0.9]})
    flight = live_view.accuracy_figures(df, {}, 3, finished=False)
    assert flight == [("test accuracy, round 3", "90.00%"), ("best so far", "90.00% @3")]
    official = {"fidelity": {"eval_timing": "before_training"}}
    after = {"fidelity": {"eval_timing": "after_aggregation"}}
    done = dict(live_view.accuracy_figures(df, official, 3, finished=True))
    assert done == {"final": "70.00% @2", "best": "70.00% @2"}
    assert dict(live_view.accuracy_figures(df, after, 3, finished=True)) == {
        "final": "90.00%",
        "best": "90.00%",
    }


def test_round_counts_read_one_way() -> None:
    """A finished 25-round run: "round 25 of 25" (rounds 0..25 stored), and its final is @24
    under before_training with the reason given, not a third count."""
    # Prepare
    stored = pd.DataFrame({"round": list(range(26)), "test_acc": [0.5] * 26})
    run = public_run(status="succeeded", rounds=25, current_round=25)
    # Execute
    head = live_view.headline(run, "succeeded", 25)
    last = live_view.last_round(stored, 25)
    official = live_view.figure_help("final", {}, 25)
    paper = live_view.figure_help("final", {"fidelity": {"profile": "paper"}}, 25)
    # Assert
    assert head == "succeeded · round 25 of 25"
    assert last == "25 of 25"
    assert live_view.last_round(stored.iloc[:0], 25) == "—"
    assert official is not None
    assert "rounds 0..24" in official
    assert "final is @24" in official
    assert paper == "Over rounds 0..25 (after_aggregation: every stored round counts)."
    assert live_view.figure_help("wall-clock", {}, 25) is None


def test_data_files_table_and_title() -> None:
    """The files a run read: one row each (path, root, size in words, sha256); the title counts
    them and their bytes."""
    files = [
        DataFile(root="/lab/data", path="MNIST/raw/a", size=2_000_000, sha256="ab" * 32),
        DataFile(root="/usr/share/datasets/fashion-mnist", path="b.gz", size=48, sha256="cd"),
    ]
    frame = live_view.data_files_frame(files)
    assert list(frame.columns) == ["path", "root", "size", "sha256"]
    assert frame["path"].tolist() == ["MNIST/raw/a", "b.gz"]
    assert frame["sha256"].tolist() == ["ab" * 32, "cd"]
    assert frame["size"].tolist() == [
        format_bytes(2_000_000),
        format_bytes(48),
    ]
    assert live_view.data_files_label(files) == f"Data files: 2 read ({format_bytes(2_000_048)})"
    assert live_view.data_files_frame([]).empty


def test_execution_caption_says_how_clients_trained_and_why() -> None:
    def info(**kw: object) -> RunInfoPublic:
        base = {"run_id": "r", "status": "succeeded", "pending": False, "spec_hash": "h"}
        return RunInfoPublic.model_validate(
            {**base, "num_users": 20, "device": "cpu", "versions": {}, **kw}
        )

    assert live_view.execution_caption(info()) is None  # started before it was recorded
    batched = info(execution="batched", execution_reason="auto: 2 CPU threads", batch_clients=10)
    assert live_view.execution_caption(batched) == (
        "Clients trained batched, 10 per computation · auto: 2 CPU threads"
    )
    seq = info(
        execution="sequential", execution_reason="the algorithm's client update does not batch"
    )
    assert live_view.execution_caption(seq) == (
        "Clients trained sequential · the algorithm's client update does not batch"
    )
