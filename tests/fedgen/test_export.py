"""`fedgen export RUN_ID` against a real lab server (the API under uvicorn, on a real database):
the YAML validates, carries the run's result hash, and its command reproduces the run's results;
a bad id, an unknown run, a refused token or no server: one line, exit code 2."""

from __future__ import annotations

import hashlib
import json
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
import uvicorn
import yaml
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

import fedgen.runner as runner_mod
from api.main import create_app
from fedgen.cli import main
from fedgen.spec import load_spec, parse_spec
from fedgen.stats import format_acc
from lab.config import Settings
from lab.models import RoundMetrics, Run
from tests.support.datafiles import MNIST_FILES, write_mnist_like
from tests.support.factories import create_run, create_user
from worker.claimed_run import execute_run
from worker.outcomes import RunOutcome

# The server side is backend-agnostic here (one GET); SQLite keeps the real run quick.
pytestmark = [
    pytest.mark.parametrize("db_url", ["sqlite"], indirect=True),
    pytest.mark.slow,  # real runs exported and rerun
]


@pytest.fixture
def server(settings: Settings, factory: sessionmaker[Session]) -> Iterator[str]:
    """The API served by uvicorn on a free local port; its base URL."""
    app = create_app(
        settings, session_factory=factory, enqueue=lambda *_: None, broker_check=lambda: None
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert srv.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    srv.should_exit = True
    thread.join(timeout=10)
    sock.close()


def test_export_writes_a_spec_that_reproduces_the_run(
    server: str,
    session: Session,
    factory: sessionmaker[Session],
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A real 2-round run on the lab; `fedgen export` (FEDGEN_API_URL, FEDGEN_TOKEN) writes
    run-<short>.yaml: `fedgen validate` accepts it, its hashes are the run's, its header says
    status and final accuracy; the command it prints runs it here to the same final accuracy."""
    user, token = create_user(session, "carol")
    run = create_run(session, user, tags=["exported"])
    # A worker slot's one thread (fewer than this machine's cores, which a plain rerun uses).
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        outcome = execute_run(str(run.id), factory, runner=runner_mod.run, settings=settings)
    finally:
        torch.set_num_threads(before)
    assert outcome == RunOutcome.SUCCEEDED
    session.expire_all()
    row = session.get(Run, run.id)
    assert row is not None
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FEDGEN_API_URL", server)
    monkeypatch.setenv("FEDGEN_TOKEN", token)
    short = str(run.id).replace("-", "")[:8]

    assert main(["export", str(run.id)]) == 0

    out = capsys.readouterr().out.splitlines()
    threads = row.versions["torch_threads"]
    command = f"fedgen run run-{short}.yaml --out runs/{short} --threads {threads}"
    assert out[-1] == command
    assert "this command repeats it bit for bit here" in "\n".join(out)
    text = (tmp_path / f"run-{short}.yaml").read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert header[0].startswith(f"# FedGen Lab run {run.id} (succeeded)")
    final = format_acc(row.summary["final_acc"], row.summary["final_round"], row.rounds)
    assert any(line.startswith(f"# final {final}") for line in header)
    assert any(line.startswith("# versions: ") and "torch " in line for line in header)
    assert f"#   {command}" in header
    exported = load_spec(tmp_path / f"run-{short}.yaml")
    assert exported.spec_hash() == row.spec_hash
    assert exported.result_hash() == parse_spec(row.spec).result_hash()
    assert yaml.safe_load(text)["tags"] == ["exported"]
    assert main(["validate", f"run-{short}.yaml"]) == 0
    assert f"# spec_hash: {row.spec_hash}" in capsys.readouterr().out

    # What the user runs next, as printed, in a process of its own: every round equals the lab's.
    rerun = subprocess.run(
        [str(Path(sys.executable).parent / "fedgen"), *shlex.split(command)[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    lines = (tmp_path / "runs" / short / "metrics.jsonl").read_text().splitlines()
    here = {m["round"]: m for m in map(json.loads, lines)}
    lab = {
        r.round: r.metrics
        for r in session.scalars(select(RoundMetrics).where(RoundMetrics.run_id == run.id))
    }
    assert sorted(here) == sorted(lab)
    assert len(lab) == row.rounds + 1
    for rnd, metrics in lab.items():
        figures = {k: v for k, v in metrics.items() if not k.startswith("time_")}  # wall clock
        assert figures, rnd
        assert {k: here[rnd]["metrics"][k] for k in figures} == figures, rnd
    summary = yaml.safe_load((tmp_path / "runs" / short / "summary.json").read_text())
    assert summary["final_acc"] == row.summary["final_acc"]
    assert summary["best_acc"] == row.summary["best_acc"]


def test_export_to_stdout(
    server: str, session: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    """-o - writes the YAML to stdout (the command goes to stderr); a queued run has no final
    accuracy yet, and says so."""
    user, token = create_user(session, "carol")
    run = create_run(session, user)

    assert main(["export", str(run.id), "-o", "-", "--api", server, "--token", token]) == 0

    captured = capsys.readouterr()
    assert captured.out.startswith(f"# FedGen Lab run {run.id} (queued)")
    assert "# no final accuracy yet (round -1 of 2)" in captured.out
    assert parse_spec(yaml.safe_load(captured.out)).spec_hash() == run.spec_hash
    short = str(run.id).replace("-", "")[:8]
    assert captured.err.strip().endswith(f"fedgen run run.yaml --out runs/{short}")


def test_export_lists_the_data_files_the_run_read(
    server: str,
    session: Session,
    factory: sessionmaker[Session],
    settings: Settings,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A real run on a tiny MNIST under the lab's data root: the header lists each file it read
    with its root, path, size and sha256 (what a researcher compares with their own copy)."""
    root = tmp_path / "data"
    labels = (np.arange(300) % 10, np.arange(60) % 10)
    write_mnist_like(root / "MNIST" / "raw", MNIST_FILES, labels, False)
    settings.data_roots = str(root)
    user, token = create_user(session, "carol")
    data = {"name": "mnist", "root": str(root)}
    run = create_run(session, user, data=data, partition={"alpha": 1.0})
    assert execute_run(str(run.id), factory, runner=runner_mod.run, settings=settings) == (
        RunOutcome.SUCCEEDED
    )

    assert main(["export", str(run.id), "-o", "-", "--api", server, "--token", token]) == 0

    header = [line for line in capsys.readouterr().out.splitlines() if line.startswith("#")]
    assert "# data files read (root, path, bytes, sha256):" in header
    for name in MNIST_FILES:
        file = root / "MNIST" / "raw" / name
        digest = hashlib.sha256(file.read_bytes()).hexdigest()
        line = f"#   {root.resolve()} MNIST/raw/{name} {file.stat().st_size} sha256:{digest}"
        assert line in header


def test_export_errors_are_one_line_and_exit_2(
    server: str, session: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not an id, a run the server does not have, a wrong token, no server: one line each."""
    _, token = create_user(session, "carol")
    missing = "00000000-0000-0000-0000-000000000042"
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # bound, never listening: connection refused
    cases = [
        (["x1"], "error: not a run id: 'x1'"),
        ([missing], f"error: no run {missing} on {server}/api/v1"),
        ([missing, "--token", "wrong"], f"error: {server}/api/v1 refused the token (401)"),
        (
            [missing, "--api", f"127.0.0.1:{dead.getsockname()[1]}"],
            f"error: cannot reach the lab server at http://127.0.0.1:{dead.getsockname()[1]}",
        ),
    ]
    try:
        for extra, message in cases:
            argv = ["export", extra[0], "--api", server, "--token", token, *extra[1:]]
            assert main(argv) == 2, extra
            err = capsys.readouterr().err
            assert err.startswith(message), err
            assert err.count("\n") == 1, err  # one line, no traceback
    finally:
        dead.close()


def test_export_takes_a_unique_prefix_and_names_the_candidates_of_an_ambiguous_one(
    server: str,
    session: Session,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The short id the pages show (8 hex digits) exports its run, whoever owns it; a prefix
    two runs share is refused with both listed; too short or unknown: one line, exit 2. A
    second export into the same file is no error when nothing changed, refused (with --force
    suggested) when the file differs, and --force writes over it. When the printed command's
    folder already holds a run, the output says that command needs --force."""
    import uuid

    from sqlalchemy import update

    carol, _ = create_user(session, "carol")
    _, token = create_user(session, "dave")
    ids = ["1a2b3c4d-0000-4000-8000-000000000001", "1a2b3c4d-9999-4000-8000-000000000002"]
    for i, rid in enumerate(ids):
        run = create_run(session, carol, seed=i)
        session.execute(update(Run).where(Run.id == run.id).values(id=uuid.UUID(rid)))
    session.commit()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FEDGEN_API_URL", server)
    monkeypatch.setenv("FEDGEN_TOKEN", token)

    assert main(["export", "1a2b3c4d"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: run id prefix 1a2b3c4d is ambiguous: 2 runs match: "), err
    assert all(f"{rid} (carol, fedavg, queued" in err for rid in ids), err
    assert err.count("\n") == 1

    assert main(["export", "1a2b3c4d-9"]) == 0  # dave exports carol's run
    assert f"wrote run-1a2b3c4d.yaml (run {ids[1]}, queued)" in capsys.readouterr().out
    assert main(["export", "1a2b3c4d-9"]) == 0  # the same file again: no error
    capsys.readouterr()
    (tmp_path / "run-1a2b3c4d.yaml").write_text("# my edits\n")
    assert main(["export", "1a2b3c4d-9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out: run-1a2b3c4d.yaml already exists"), err
    assert "pass --force to write over it" in err
    assert (tmp_path / "run-1a2b3c4d.yaml").read_text() == "# my edits\n"
    (tmp_path / "runs" / "1a2b3c4d").mkdir(parents=True)
    (tmp_path / "runs" / "1a2b3c4d" / "summary.json").write_text("{}")
    assert main(["export", "1A2B3C4D-9", "--force"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "run-1a2b3c4d.yaml").read_text().startswith(f"# FedGen Lab run {ids[1]}")
    assert "runs/1a2b3c4d already holds a run (summary.json)" in out
    assert "add --force to delete it and run afresh" in out

    for prefix, message in (
        ("1a2", "error: not a run id: '1a2' (the full id, or its first 4 or more hex digits"),
        ("0bad", f"error: no run whose id starts with 0bad on {server}/api/v1"),
    ):
        assert main(["export", prefix]) == 2
        err = capsys.readouterr().err
        assert err.startswith(message), err
        assert err.count("\n") == 1
