"""Workers say what they can run; the dispatcher sends a run only to a worker that can run it.

- `vocab.host_datasets.loadable` finds datasets in torchvision's layout (tiny files written here);
- `code_version`: the git commit (+dirty) in a checkout, a hash of the sources elsewhere;
- a run whose dataset no live worker has stays queued with a `waiting_reason` and does not hold
  back the runs behind it; once a worker that has it is live, it goes to that worker's queue;
- a run sent to a worker that died is sent to another live worker at once;
- a worker that cannot load the dataset hands the run back (queued, with a notice) and stops
  advertising the dataset;
- GET /workers lists the live workers with what they can run and what they run.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from fedgen import versions as versions_mod
from fedgen.data.common import DatasetError
from lab.config import Settings
from lab.db import db_now
from lab.dispatch import dispatch_pass
from lab.models import Run, Worker
from lab.repository import runs as runs_repo
from lab.repository import workers as workers_repo
from tests.support.factories import create_run, create_user, live_worker
from tests.support.fakes import FakeRunner
from vocab.host_datasets import loadable
from worker import capabilities
from worker.capabilities import Advertised
from worker.claimed_run import execute_run
from worker.outcomes import MAX_HAND_BACKS, RunOutcome

API = "/api/v1"
IDX = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
IDX_TEST = ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def _sent(session: Session, settings: Settings) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    dispatch_pass(session, lambda rid, q: out.append((rid, q)), settings, "test")
    return out


def test_loadable_finds_the_torchvision_layouts(tmp_path: Path) -> None:
    """MNIST (gzipped) and EMNIST letters under <root>/<Class>/raw, CelebA's files; a folder
    missing one file does not count."""
    for name in (*IDX, *IDX_TEST):
        (tmp_path / "MNIST" / "raw").mkdir(parents=True, exist_ok=True)
        (tmp_path / "MNIST" / "raw" / f"{name}.gz").write_bytes(b"x")
    letters = tmp_path / "EMNIST" / "raw"
    letters.mkdir(parents=True)
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "test-images-idx3-ubyte"):
        (letters / f"emnist-letters-{name}").write_bytes(b"x")  # test labels missing
    found = loadable(tmp_path)
    assert "mnist" in found
    assert "synthetic" in found
    assert "emnist-letters" not in found
    assert "celeba" not in found
    (letters / "emnist-letters-test-labels-idx1-ubyte").write_bytes(b"x")
    celeba = tmp_path / "celeba"
    (celeba / "img_align_celeba").mkdir(parents=True)
    for name in ("identity_CelebA.txt", "list_attr_celeba.txt"):
        (celeba / name).write_text("")
    assert {"mnist", "emnist-letters", "celeba"} <= set(loadable(tmp_path))


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_code_version_is_the_commit_or_a_source_hash(tmp_path: Path) -> None:
    """A checkout gives git:<commit> and +dirty once a tracked file changes; a copy without
    .git gives src:<hash> that changes with the sources."""
    copy = tmp_path / "copy"
    (copy / "fedgen").mkdir(parents=True)
    (copy / "fedgen" / "a.py").write_text("x = 1\n")
    first = versions_mod._sources_hash(copy)
    (copy / "fedgen" / "a.py").write_text("x = 2\n")
    assert versions_mod._sources_hash(copy) != first
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(copy)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    head = versions_mod._git(copy, "rev-parse", "HEAD")
    assert head
    assert len(head.strip()) == 40
    assert versions_mod._git(copy, "status", "--porcelain", "--untracked-files=no") == ""
    (copy / "fedgen" / "a.py").write_text("x = 3\n")
    assert versions_mod._git(copy, "status", "--porcelain", "--untracked-files=no")
    this = versions_mod.code_version()
    assert this.startswith(("git:", "src:"))
    assert versions_mod.versions()["code"] == this


def test_a_run_no_live_worker_can_load_waits_with_its_reason(
    session: Session, settings: Settings, client: TestClient, auth: dict[str, str]
) -> None:
    """Only a worker without mnist: the mnist run is not sent, says why, and the synthetic run
    behind it goes; a worker with mnist comes: the mnist run goes to that worker's queue."""
    user, _ = create_user(session, "carol")
    blocked = create_run(session, user, seed=1, data={"name": "mnist"})
    behind = create_run(session, user, seed=2)
    live_worker(session, "cpu", slots=2, name="a@h1", datasets=["synthetic", "fashion-mnist"])
    assert _sent(session, settings) == [(str(behind.id), "worker.a@h1")]
    body = client.get(f"{API}/runs/{blocked.id}", headers=auth).json()
    assert body["status"] == "queued"
    assert body["waiting_reason"] == "no live worker has dataset mnist"
    assert body["expected_start"] is None  # it holds no slot in the estimate
    assert _sent(session, settings) == []  # a free slot left, still not sent to a@h1
    live_worker(session, "cpu", slots=1, name="b@h2", datasets=["mnist", "synthetic"])
    assert _sent(session, settings) == [(str(blocked.id), "worker.b@h2")]
    assert client.get(f"{API}/runs/{blocked.id}", headers=auth).json()["waiting_reason"] is None
    row = session.get(Run, blocked.id)
    session.refresh(row)
    assert row is not None
    assert row.dispatched_to == "b@h2"


def test_a_run_that_downloads_or_names_its_root_may_go_to_any_worker(
    session: Session, settings: Settings
) -> None:
    """No worker has mnist's files, but a run that downloads them, or reads its own data.root,
    is sent (the worker's probe looks only under its FEDGEN_DATA)."""
    user, _ = create_user(session, "carol")
    local = create_run(session, user, seed=1, data={"name": "mnist"})
    online = create_run(session, user, seed=2, data={"name": "mnist", "download": True})
    rooted = create_run(session, user, seed=3, data={"name": "mnist", "root": "/shared/data"})
    live_worker(session, "cpu", slots=3, name="a@h1", datasets=["synthetic"])
    sent = {rid for rid, _ in _sent(session, settings)}
    assert sent == {str(online.id), str(rooted.id)}
    assert str(local.id) not in sent


@pytest.mark.slow  # real runs
def test_no_worker_on_the_queue_is_a_reason_too(
    session: Session, client: TestClient, auth: dict[str, str]
) -> None:
    """With no live worker at all, a queued run says no worker serves its queue."""
    user, _ = create_user(session, "carol")
    run = create_run(session, user)
    body = client.get(f"{API}/runs/{run.id}", headers=auth).json()
    assert body["waiting_reason"] == "no live worker serves the cpu queue"


def test_a_run_sent_to_a_dead_worker_moves_to_a_live_one(
    session: Session, settings: Settings
) -> None:
    """The run's worker stops beating before claiming it: the next pass sends it elsewhere,
    without waiting for the re-send back-off."""
    user, _ = create_user(session, "carol")
    run = create_run(session, user)
    live_worker(session, "cpu", slots=1, name="a@h1", datasets=["synthetic"])
    assert _sent(session, settings) == [(str(run.id), "worker.a@h1")]
    live_worker(session, "cpu", slots=1, name="b@h2", datasets=["synthetic"])
    assert _sent(session, settings) == []  # a@h1 is alive: its message waits
    old = db_now(session) - timedelta(seconds=settings.worker_ttl_s + 5)
    session.execute(update(Worker).where(Worker.name == "a@h1").values(heartbeat_at=old))
    session.commit()
    assert _sent(session, settings) == [(str(run.id), "worker.b@h2")]


@pytest.mark.slow  # real runs
def test_a_worker_that_cannot_load_the_dataset_hands_the_run_back(
    session: Session,
    factory: sessionmaker[Session],
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    client: TestClient,
    auth: dict[str, str],
) -> None:
    """The load fails: the run is queued again (not failed) with the reason, the worker's row no
    longer offers the dataset, and the next pass sends the run to another worker."""
    user, _ = create_user(session, "carol")
    run = create_run(session, user)
    advertised = Advertised(1, root=tmp_path)
    monkeypatch.setattr(capabilities, "_current", advertised)
    workers_repo.register(session, "a@h1", ["cpu"], 1, capabilities=advertised.as_json())
    session.commit()
    assert "synthetic" in advertised.datasets()

    def broken(*_args: object, **_kwargs: object) -> None:
        raise DatasetError("synthetic: dataset files not found (a test)")

    out = execute_run(str(run.id), factory, runner=broken, settings=settings, worker_name="a@h1")
    assert out == RunOutcome.HANDED_BACK
    session.expire_all()
    row = session.get(Run, run.id)
    assert row is not None
    assert row.status == "queued"
    assert row.lease_token is None
    assert row.error
    assert "could not load dataset synthetic" in row.error
    caps = session.scalars(select(Worker.capabilities).where(Worker.name == "a@h1")).one()
    assert "synthetic" not in caps["datasets"]
    assert "synthetic" not in advertised.datasets()
    body = client.get(f"{API}/runs/{run.id}", headers=auth).json()
    assert body["waiting_reason"] == "no live worker has dataset synthetic"
    live_worker(session, "cpu", slots=1, name="b@h2", datasets=["synthetic"])
    assert _sent(session, settings) == [(str(run.id), "worker.b@h2")]


def test_a_failed_load_from_a_runs_own_root_keeps_the_dataset_offered(
    session: Session,
    factory: sessionmaker[Session],
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run named its own data.root: it is handed back, but the worker's own folder is not
    in question, so it goes on offering the dataset."""
    user, _ = create_user(session, "carol")
    settings.data_roots = str(tmp_path)  # the run's root lies inside the lab's data roots
    run = create_run(session, user, data={"name": "synthetic", "root": str(tmp_path / "x")})
    advertised = Advertised(1, root=tmp_path)
    monkeypatch.setattr(capabilities, "_current", advertised)

    def broken(*_args: object, **_kwargs: object) -> None:
        raise DatasetError("synthetic: dataset files not found (a test)")

    out = execute_run(str(run.id), factory, runner=broken, settings=settings, worker_name="a@h1")
    assert out == RunOutcome.HANDED_BACK
    assert "synthetic" in advertised.datasets()
    # Every worker fails the same way: after MAX_HAND_BACKS claims the run fails, with why.
    outs = [
        execute_run(str(run.id), factory, runner=broken, settings=settings, worker_name=f"w{i}")
        for i in range(MAX_HAND_BACKS - 1)
    ]
    assert outs == [RunOutcome.HANDED_BACK] * (MAX_HAND_BACKS - 2) + [RunOutcome.FAILED]
    session.expire_all()
    row = session.get(Run, run.id)
    assert row is not None
    assert row.status == "failed"
    assert f"no worker could load dataset synthetic in {MAX_HAND_BACKS} attempts" in row.error


def test_a_failed_folder_load_keeps_the_folder_dataset_offered(
    session: Session,
    factory: sessionmaker[Session],
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A `folder` run names its own files: its failed load hands it back, and the worker goes on
    offering `folder` to the next run (whose folder may well be there)."""
    user, _ = create_user(session, "carol")
    folder = {"path": "missing", "classes": 3}
    run = create_run(session, user, data={"name": "folder", "folder": folder})
    advertised = Advertised(1, root=tmp_path)
    monkeypatch.setattr(capabilities, "_current", advertised)
    assert "folder" in advertised.datasets()

    def broken(*_args: object, **_kwargs: object) -> None:
        raise DatasetError("data.folder: folder missing does not exist (a test)")

    out = execute_run(str(run.id), factory, runner=broken, settings=settings, worker_name="a@h1")
    assert out == RunOutcome.HANDED_BACK
    assert "folder" in advertised.datasets()


def test_workers_endpoint_lists_live_workers_and_their_runs(
    session: Session, settings: Settings, client: TestClient, auth: dict[str, str]
) -> None:
    """Two live workers, one dead; one run held by a@h1: the list shows the two live ones with
    their capabilities and a@h1's run."""
    user, _ = create_user(session, "carol")
    run = create_run(session, user, rounds=7)
    workers_repo.register(
        session,
        "a@h1",
        ["cpu"],
        1,
        host="h1",
        capabilities={
            "slots": 1,
            "threads": 2,
            "devices": [{"kind": "cpu", "name": "Test CPU", "cores": 2}],
            "code_version": "git:" + "a" * 40,
            "datasets": ["synthetic"],
        },
    )
    live_worker(session, "cpu", slots=1, name="b@h2", datasets=["mnist"])
    live_worker(session, "cpu", slots=1, name="dead@h3", datasets=["mnist"])
    old = db_now(session) - timedelta(seconds=settings.worker_ttl_s + 5)
    session.execute(update(Worker).where(Worker.name == "dead@h3").values(heartbeat_at=old))
    session.commit()
    assert runs_repo.claim(
        session, run.id, worker="a@h1", token=uuid.uuid4().hex, device="cpu", lease_s=60
    )
    session.commit()
    r = client.get(f"{API}/workers", headers=auth)
    assert r.status_code == 200, r.text
    body = r.json()
    assert [w["name"] for w in body["workers"]] == ["a@h1", "b@h2"]
    a = body["workers"][0]
    assert a["host"] == "h1"
    assert a["threads"] == 2
    assert a["datasets"] == ["synthetic"]
    assert a["devices"] == [
        {"kind": "cpu", "name": "Test CPU", "cores": 2, "index": None, "memory_bytes": None}
    ]
    assert a["code_version"] == "git:" + "a" * 40
    assert [x["id"] for x in a["running"]] == [str(run.id)]
    assert a["running"][0]["rounds"] == 7
    assert body["workers"][1]["running"] == []
    assert (body["slots"], body["busy"]) == (2, 1)
    assert client.get(f"{API}/workers").status_code == 401


def test_segments_name_host_slot_and_code(
    session: Session, factory: sessionmaker[Session], settings: Settings
) -> None:
    """A run's segment records the host and slot of its worker and the code version it ran."""
    user, _ = create_user(session, "carol")
    run = create_run(session, user, rounds=2)
    runner = FakeRunner(versions={"fedgen": "test", "code": "git:" + "b" * 40})
    out = execute_run(
        str(run.id), factory, runner=runner, settings=settings, worker_name="slot0@h9"
    )
    assert out == RunOutcome.SUCCEEDED
    session.expire_all()
    row = session.get(Run, run.id)
    assert row is not None
    seg = row.segments[0]
    assert (seg["host"], seg["slot"]) == ("h9", "slot0")
    assert seg["code_version"] == row.versions["code"] == "git:" + "b" * 40
