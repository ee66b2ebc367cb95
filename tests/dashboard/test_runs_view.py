"""Runs page helpers: ETA from the run's own median round time, durations, readable times."""

from __future__ import annotations

import csv as csvlib
import io
from datetime import UTC, datetime, timedelta

from dashboard import annotate, permissions, run_eta, run_failures, run_state, runs_table, times
from dashboard.runs_page import run_filters, runs_csv, status_counts
from tests.support.factories import public_run
from vocab.schemas.runs import RunPublic
from vocab.schemas.users import UserPublic

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def _run(**kw: object) -> RunPublic:
    return public_run(spec={"algorithm": {"name": "fedgen"}, "seed": 3}, **kw)


def test_eta_is_median_round_time_times_rounds_left() -> None:
    """Round 0 (evaluation only) is left out; one slow round does not move the median."""
    run = _run(status="running", rounds=10, current_round=4)
    ms = [50.0, 2000.0, 2000.0, 9000.0, 2000.0]
    assert run_eta.median_round_s(ms) == 2.0
    assert run_eta.eta_seconds(run, ms) == 12.0
    assert run_eta.eta_seconds(run, [50.0]) is None
    df = runs_table.table([run], NOW, UTC, {"r1": ms})
    assert df.loc[0, "ETA"] == "12 s (12:00)"


def test_durations_and_times_read_like_words() -> None:
    """Durations in s/min/h/d; timestamps relative plus the local wall-clock time."""
    assert times.duration(42) == "42 s"
    assert times.duration(185) == "3 min 05 s"
    assert times.duration(7620) == "2 h 07 min"
    assert times.duration(None) == "—"
    earlier = (NOW - timedelta(minutes=5)).isoformat()
    assert times.when(earlier, NOW, times.zone("Europe/Berlin")) == "5 min ago (12:55)"
    assert times.when(None, NOW, UTC) == "—"
    assert times.zone("Not/AZone") is UTC
    finished = _run(
        status="succeeded",
        started_at="2026-12-01T10:00:00Z",
        finished_at="2026-12-01T11:30:00+00:00",
    )
    assert run_state.run_duration(finished, NOW) == "1 h 30 min"


def test_status_counts_in_lifecycle_order() -> None:
    """The server's counts follow queued, running, succeeded, failed, cancelled; statuses with
    no run left out; an estimate says so."""
    counts: dict = {"failed": 1, "succeeded": 2_500, "running": 0, "queued": 1, "cancelled": 0}
    assert status_counts.counts_line(counts) == "1 queued · 2,500 succeeded · 1 failed"
    assert status_counts.counts_line(counts, exact=False).startswith("about 1 queued")
    assert status_counts.counts_line({}) == "no runs"


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
    assert run_state.waiting_for(emnist) == "a worker with dataset emnist-letters"
    assert run_state.waiting_for(nobody) == "a worker serving the lab-gpu queue"
    assert run_state.waiting_for(other) == "the moon is in the wrong phase"
    assert run_state.waiting_for(_run(status="queued", waiting_reason=None)) == "—"
    df = runs_table.table([emnist, _run(status="queued")], NOW, UTC)
    assert list(df["waiting for"]) == ["a worker with dataset emnist-letters", "—"]
    assert (df.loc[0, "queue"], df.loc[0, "expected start"]) == ("#1", "—")
    assert "waiting for" in runs_table.shown_columns(df)


def test_waiting_for_column_hidden_when_no_run_waits_for_a_worker() -> None:
    """The column is left out of the table when every run shown has a worker that can take it."""
    df = runs_table.table([_run(status="queued"), _run(status="succeeded")], NOW, UTC)
    shown = runs_table.shown_columns(df)
    assert "waiting for" not in shown
    assert shown == [c for c in runs_table.TABLE_COLUMNS if c not in runs_table.OPTIONAL_COLUMNS]


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
    states = [run_state.state(r) for r in (claimed, cancelling, early)]
    assert states == ["claimed", "cancelling", "failed"]
    assert (
        run_failures.failure(early)
        == "before round 0: mnist: dataset files not found. Searched: /x."
    )
    assert run_failures.failure(late) == "in round 3 of 6: RuntimeError: boom"
    assert run_failures.failure(claimed) == "—"
    df = runs_table.table([claimed, cancelling, late], NOW, UTC)
    assert list(df["status"]) == ["claimed", "cancelling", "failed"]
    assert list(df["progress"]) == ["0/10", "4/10", "2/6"]
    assert "error" in runs_table.shown_columns(df)
    shown, total, recent = run_failures.recent_failures([early, claimed, late], NOW)
    assert (len(shown), total, recent) == (2, 2, True)


def _t2(
    rid: str, gbs: int, lr: float, status: str = "succeeded", seed: int = 0, **kw: object
) -> RunPublic:
    """A Table 2 style run: FedGen on MNIST, differing only in gen_batch_size and lr."""
    spec = {
        "algorithm": {"name": "fedgen", "gen_batch_size": gbs},
        "data": {"name": "mnist"},
        "partition": {"alpha": 0.1},
        "lr": lr,
        "seed": seed,
        "rounds": 10,
    }
    return public_run(id=rid, spec=spec, status=status, rounds=10, **kw)


def test_runs_are_named_by_the_fields_that_differ() -> None:
    """Runs that differ only in gen_batch_size and lr get names that say so (not one shared
    "fedgen · mnist · α=0.1 · seed=0"); the algorithm and the dataset always lead, so a run
    alone is named as it is among others."""
    # Prepare
    runs = [_t2("a" * 36, 32, 0.01), _t2("b" * 36, 64, 0.01), _t2("c" * 36, 32, 0.05)]
    # Execute
    df = runs_table.table(runs, NOW, UTC)
    alone = runs_table.table(runs[:1], NOW, UTC)
    # Assert
    assert list(df["run"]) == [
        "FedGen · MNIST · B_G=32 · lr=0.01 · s0",
        "FedGen · MNIST · B_G=64 · lr=0.01 · s0",
        "FedGen · MNIST · B_G=32 · lr=0.05 · s0",
    ]
    assert list(alone["run"]) == ["FedGen · MNIST · s0"]
    assert list(df["id"]) == ["aaaaaaaa", "bbbbbbbb", "cccccccc"]
    assert runs_table.common_fields(runs) == "algorithm=fedgen, dataset=mnist, alpha=0.1"
    first = ["run", "status", "final acc (%)", "seed", "progress", "owner", "id", "ETA", "queue"]
    assert runs_table.TABLE_COLUMNS[:11] == [*first, "waiting for", "error"]


def test_table_shows_words_and_the_csv_real_values() -> None:
    """The page says "12 min ago" and dashes; the CSV has numbers, UTC ISO times, full ids and
    empty cells where there is nothing."""
    # Prepare
    done = _t2(
        "d" * 36,
        32,
        0.01,
        summary={"final_acc": 0.8765},
        best_acc=0.9,
        last_acc=0.8765,
        created_at="2026-12-01T11:48:00+00:00",
        started_at="2026-12-01T11:50:00Z",
        finished_at="2026-12-01T11:55:30Z",
        current_round=10,
        tags=["t2", "lr"],
        note="ok\nmore",
        owner="alice",
        peak_rss_bytes=512 * 1024 * 1024,
        cpu_s=301.5,
    )
    queued = _t2("e" * 36, 64, 0.01, status="queued", created_at="2026-12-01T11:59:00Z")
    # Execute
    df = runs_table.table([done, queued], NOW, UTC)
    text = runs_csv.csv_frame([done, queued], NOW).to_csv(index=False)
    csv = list(csvlib.reader(io.StringIO(text)))
    # Assert
    row = df.iloc[0]
    assert round(row["final acc (%)"], 2) == 87.65
    assert (row["running time"], row["age"], row["note"]) == ("5 min 30 s", "12 min ago", "ok …")
    assert row["tags"] == "t2, lr"
    assert row["peak RSS (MiB)"] == 512.0
    assert df.iloc[1]["running time"] == "waiting 1 min 00 s"
    header = csv[0]
    assert header[:3] == ["id", "run", "status"]
    first = dict(zip(header, csv[1], strict=True))
    assert first["id"] == "d" * 36
    assert float(first["final_acc_pct"]) == 87.65
    assert float(first["running_s"]) == 330.0
    assert first["created_at"] == "2026-12-01T11:48:00Z"
    assert first["finished_at"] == "2026-12-01T11:55:30Z"
    assert (first["tags"], first["peak_rss_bytes"], first["cpu_s"]) == (
        "t2;lr",
        "536870912",
        "301.5",
    )
    second = dict(zip(header, csv[-1], strict=True))
    assert (second["status"], second["started_at"], second["final_acc_pct"]) == ("queued", "", "")
    assert "—" not in text
    assert "ago" not in text


def test_who_may_change_a_run_and_the_typed_filters() -> None:
    """Owner or admin may change a run; tags and `where` clauses typed in a box are split."""
    run = public_run(owner="alice")
    assert permissions.may_change(run, UserPublic(id="1", name="alice", is_admin=False))
    assert permissions.may_change(run, UserPublic(id="2", name="root", is_admin=True))
    assert not permissions.may_change(run, UserPublic(id="3", name="bob", is_admin=False))
    assert not permissions.may_change(run, None)
    assert annotate.parse_tags(" t2, lr ,, t2,") == ["t2", "lr"]
    clauses = run_filters.where_clauses("algorithm.gen_batch_size=32; lr=0.01;\n")
    assert clauses == ["algorithm.gen_batch_size=32", "lr=0.01"]
    details = dict(runs_table.details(public_run(id="f" * 36), NOW, UTC))
    assert details["id"] == "f" * 36
    assert "2026-12-01T11:00:00Z" in details["submitted"]


def test_compact_name_abbreviates_and_puts_the_seed_last() -> None:
    """The issue's example fits about 40 characters: the paper's symbols, the algorithm's
    label, the dataset's short name, the seed last whatever the field order."""
    from vocab.run_names import compact_name

    # Prepare
    fields = {
        "users_per_round": 20,
        "rounds": 30,
        "local_steps": 40,
        "data.name": "fashion-mnist",
        "algorithm.name": "fedprox",
    }
    # Execute
    name = compact_name(fields, 1)
    # Assert
    assert name == "FedProx · FMNIST · T=40 · R=30 · u=20 · s1"
    assert len(name) <= 42
    assert name.endswith("· s1")
    assert compact_name({"partition.alpha": 0.1, "model.name": "mcmahan-cnn"}, 0) == (
        "model=mcmahan-cnn · α=0.1 · s0"
    )


def test_compact_name_keeps_a_paths_last_part() -> None:
    """A data root or folder path that differs is named by its last part, not the whole path."""
    from vocab.run_names import compact_name

    # Execute
    name = compact_name({"data.name": "mnist", "data.root": "/tmp/pytest-of-root/x/no-mnist/"}, 0)
    folder = compact_name({"data.folder.path": "shapes"}, 1)
    # Assert
    assert name == "MNIST · root=…/no-mnist · s0"
    assert folder == "path=shapes · s1"


def test_compact_names_tell_runs_apart() -> None:
    """Only what differs is named; a repeated spec gets " #2"; the seed is always there."""
    from dashboard.run_name import compact_names

    # Prepare
    runs = [_t2("a", 32, 0.01), _t2("b", 32, 0.01), _t2("c", 32, 0.01, seed=1)]
    # Execute
    names = compact_names(runs)
    # Assert
    assert names == {
        "a": "FedGen · MNIST · s0",
        "b": "FedGen · MNIST · s0 #2",
        "c": "FedGen · MNIST · s1",
    }


def test_failed_runs_whole_error_is_kept() -> None:
    """The table's cell is the first line; full_failure keeps every line of the message (the
    traceback left to the Live page) with the round it stopped at."""
    # Prepare
    long = "data.folder.path: folder /nonexistent/lab/data/fashion does not exist on worker w1"
    error = f"{long}\nsecond line\n\nTraceback (most recent call last):\n  x"
    run = _run(status="failed", rounds=6, current_round=2, error=error)
    # Execute
    cell = runs_table.table([run], NOW, UTC).loc[0, "error"]
    full = run_failures.full_failure(run)
    # Assert
    assert cell == f"in round 3 of 6: {long}"
    assert full == f"Failed in round 3 of 6:\n{long}\nsecond line"
    assert "Traceback" not in full
