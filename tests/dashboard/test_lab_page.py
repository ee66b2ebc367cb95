"""The Lab page, the Runs page's "waiting for" column and the Live page's segments, through
AppTest on the real API (a worker row registered in the test database, or the API's new run
fields added to its answers)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fedgen_lab.endpoints import LabApi
from lab.db import session_scope
from lab.repository import workers as workers_repo
from tests.support.apptest import open_page, texts
from tests.support.dashboard_lab import Lab, tiny_spec
from vocab.schemas.runs import RunPublic, RunsPublic, Segment
from vocab.schemas.workers import WorkersPublic

COMMIT = "0123456789abcdef0123456789abcdef01234567"
CAPS = {
    "threads": 1,
    "devices": [{"kind": "cpu", "name": "AMD EPYC 7B13", "cores": 2}],
    "code_version": f"git:{COMMIT}+dirty",
    "datasets": ["fashion-mnist", "synthetic"],
}
EMNIST = "no live worker has dataset emnist-letters"

# The session's lab grows as other tests submit runs: one page holds them all.
WHOLE_LAB = {"runs_per_page": 500}


@pytest.fixture
def live_worker(lab: Lab) -> Iterator[str]:
    """A live worker row (cpu-slot0@w1) in the lab's database, removed afterwards."""
    name = "cpu-slot0@w1"
    with session_scope(lab.app.state.sessionmaker) as s:
        workers_repo.register(s, name, ["cpu"], 1, host="w1", capabilities=CAPS)
    yield name
    with session_scope(lab.app.state.sessionmaker) as s:
        workers_repo.unregister(s, name)


@pytest.fixture
def busy_workers(monkeypatch: pytest.MonkeyPatch, lab_env: dict[str, Any]) -> str:
    """GET /workers answers two workers on two hosts, one holding the seeded queued run."""
    run_id = lab_env["queued_id"]
    now = datetime.now(UTC)
    base = {
        **CAPS,
        "queues": ["cpu"],
        "slots": 1,
        "started_at": (now - timedelta(hours=1)).isoformat(),
        "heartbeat_at": (now - timedelta(seconds=8)).isoformat(),
        "running": [],
    }
    body = {
        "workers": [
            {
                **base,
                "name": "cpu-slot0@w1",
                "host": "w1",
                "running": [
                    {
                        "id": run_id,
                        "algorithm": "FedGen",
                        "dataset": "fashion-mnist",
                        "current_round": 12,
                        "rounds": 30,
                    }
                ],
            },
            {
                **base,
                "name": "gpu-slot0@w2",
                "host": "w2",
                "queues": ["gpu"],
                "devices": [
                    {
                        "kind": "cuda",
                        "index": "0",
                        "name": "NVIDIA H200",
                        "memory_bytes": 150_000_000_000,
                    }
                ],
            },
        ],
        "slots": 2,
        "busy": 1,
    }
    answer = WorkersPublic.model_validate(body)
    monkeypatch.setattr(LabApi, "workers", lambda self: answer)
    return run_id


def test_lab_page_empty_state(app_path: str, lab_env: dict[str, Any]) -> None:
    """No live worker: a clear sentence on how to start one, no table, no exception."""
    # Execute
    at = open_page(app_path, "app_pages/lab.py")
    # Assert
    assert not at.exception
    assert at.title[0].value == "Lab"
    assert "No live worker. Start one with `fedgen-lab worker`" in texts(at)
    assert not [d for d in at.dataframe if "heartbeat" in d.value]


def test_lab_page_lists_a_registered_worker(
    app_path: str, lab_env: dict[str, Any], live_worker: str
) -> None:
    """A worker row in the database shows through GET /workers with its host, slot and code."""
    # Execute
    at = open_page(app_path, "app_pages/lab.py")
    # Assert
    assert not at.exception
    assert "1 worker · 1 slot on 1 host, 0/1 slots busy" in texts(at)
    df = at.dataframe[0].value
    row = df.iloc[0]
    assert (row["host"], row["slot"], row["running"]) == ("w1", "cpu-slot0", "idle")
    assert row["code version"] == "git:0123456789ab+dirty"
    assert row["devices"] == "AMD EPYC 7B13 · 2 cores"
    assert row["datasets"] == "fashion-mnist, synthetic"
    assert f"Every worker runs `git:{COMMIT}+dirty`." in texts(at)


def test_lab_page_shows_what_each_worker_runs(
    app_path: str, lab_env: dict[str, Any], busy_workers: str
) -> None:
    """Busy slots, GPU and CPU devices, the run held (round r/R) and a link to watch it."""
    # Execute
    at = open_page(app_path, "app_pages/lab.py")
    # Assert
    assert not at.exception
    assert "2 workers · 2 slots on 2 hosts, 1/2 slots busy" in texts(at)
    df = at.dataframe[0].value
    assert list(df["host"]) == ["w1", "w2"]
    assert df.iloc[0]["running"] == f"{busy_workers[:8]} FedGen · FMNIST · round 12/30"
    assert df.iloc[1]["devices"] == "GPU 0: NVIDIA H200 · 140 GiB"
    assert re.fullmatch(r"\d+ s ago", df.iloc[1]["heartbeat"])
    links = [(link.proto.page, link.proto.query_string) for link in at.get("page_link")]
    assert ("live", f"run={busy_workers}") in links


@pytest.fixture
def waiting_runs(
    monkeypatch: pytest.MonkeyPatch, lab_env: dict[str, Any], lab: Lab
) -> Iterator[str]:
    """A queued run of this test's own (another test may cancel the seeded one) waits for a
    worker with emnist-letters (as the API says)."""
    with lab.client() as c:
        queued = c.post("/runs", json={"spec": tiny_spec(seed=8)}).raise_for_status().json()
    real = LabApi.list_runs
    run_id = str(queued["id"])

    def with_reason(self: LabApi, **filters: Any) -> RunsPublic:
        body = real(self, **filters)
        waits = {"waiting_reason": EMNIST}
        runs = [r.model_copy(update=waits) if r.id == run_id else r for r in body.data]
        return body.model_copy(update={"data": runs})

    monkeypatch.setattr(LabApi, "list_runs", with_reason)
    yield run_id
    with lab.client() as c:
        c.delete(f"/runs/{run_id}")  # the session's lab keeps its seeded run counts


def test_runs_page_says_what_a_queued_run_waits_for(
    app_path: str, lab_env: dict[str, Any], waiting_runs: str
) -> None:
    """A run no live worker can take shows what it waits for; finished runs a dash."""
    # Execute
    at = open_page(app_path, "app_pages/runs.py", WHOLE_LAB)
    # Assert
    assert not at.exception
    df = at.dataframe[0].value
    waiting = df.set_index("id")["waiting for"]
    assert waiting[waiting_runs[:8]] == "a worker with dataset emnist-letters"
    assert set(df[df["status"] == "succeeded"]["waiting for"]) == {"—"}
    # "1 run" alone; other tests of the session's lab may have left more that wait.
    assert any("no live worker can take" in str(link.proto.label) for link in at.get("page_link"))


def test_lab_page_lists_runs_no_worker_can_take(
    app_path: str, lab_env: dict[str, Any], waiting_runs: str
) -> None:
    """Under the (empty) workers, the runs that wait for a missing worker."""
    # Execute
    at = open_page(app_path, "app_pages/lab.py")
    # Assert
    assert not at.exception
    assert "No live worker" in texts(at)
    df = at.dataframe[0].value.set_index("id")
    assert df.loc[waiting_runs[:8], "waiting for"] == "a worker with dataset emnist-letters"
    assert "—" not in set(df["waiting for"])  # only runs that wait for a missing worker


def _segment(**kw: object) -> Segment:
    fields = {
        "attempt": 1,
        "worker": "cpu-slot0@w1",
        "host": "w1",
        "slot": "cpu-slot0",
        "code_version": f"git:{COMMIT}",
        "device": "cpu",
        "start_round": 0,
        "last_round": 2,
        "resumed_from": None,
        "started_at": datetime.now(UTC).isoformat(),
        "fedgen": "0.1",
        "torch": "2.5.1",
        "torch_threads": "2",
        "cpu_capability": "AVX2",
    }
    return Segment.model_validate({**fields, **kw})


def test_live_page_shows_where_a_resumed_run_ran(
    app_path: str, lab_env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two segments: the resume sentence, the numerics change and the segments table."""
    # Prepare
    run_id = lab_env["run_ids"][0]
    real = LabApi.get_run
    segments = [
        _segment(),
        _segment(
            attempt=2,
            worker="cpu-slot1@w2",
            host="w2",
            slot="cpu-slot1",
            start_round=3,
            last_round=6,
            resumed_from=2,
            torch_threads="1",
        ),
    ]
    numerics = {"numerics_changed": [{"round": 3, "torch_threads": ["2", "1"]}]}

    def resumed(self: LabApi, rid: str) -> RunPublic:
        run = real(self, rid)
        ran = {"segments": segments, "versions": numerics}
        return run.model_copy(update=ran) if rid == run_id else run

    monkeypatch.setattr(LabApi, "get_run", resumed)
    # Execute
    at = open_page(app_path, "app_pages/live.py", {"live_run_id": run_id})
    # Assert
    assert not at.exception
    assert "Resumed on w2 (cpu-slot1) from round 2's checkpoint." in texts(at)
    assert "torch threads 2 → 1" in texts(at)
    table = next(d.value for d in at.dataframe if "resumed from" in d.value)
    assert list(table["rounds"]) == ["0–2", "3–6"]
    assert list(table["resumed from"]) == ["fresh start", "round 2's checkpoint"]


def test_live_page_says_why_a_queued_run_waits(
    app_path: str, lab_env: dict[str, Any], waiting_runs: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queued run no live worker can take: the reason, above the 'no rounds yet' note."""
    # Prepare
    real = LabApi.get_run

    def with_reason(self: LabApi, rid: str) -> RunPublic:
        run = real(self, rid)
        return run.model_copy(update={"waiting_reason": EMNIST}) if rid == waiting_runs else run

    monkeypatch.setattr(LabApi, "get_run", with_reason)
    # Execute
    at = open_page(app_path, "app_pages/live.py", {"live_run_id": waiting_runs})
    # Assert
    assert not at.exception
    assert [w.value for w in at.warning] == [
        f"Waiting: {EMNIST}. It starts when a worker that can run it is up (see the Lab page)."
    ]
    assert "No rounds yet" in texts(at)
