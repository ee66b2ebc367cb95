"""`fedgen-lab` as a user types it: users create, db upgrade, and `up` restarting a killed worker
and stopping everything."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from lab.db import make_engine
from lab.security import hash_token
from tests.support.procs import alive as _alive
from worker.slots import plan_slots, usable_cores, visible_devices

pytestmark = pytest.mark.slow
LAB = [sys.executable, "-m", "admin"]


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ, FEDGEN_HOME=str(home))
    for key in ("FEDGEN_DATABASE_URL", "FEDGEN_BROKER_URL"):
        env.pop(key, None)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _descendants(pid: int) -> set[int]:
    """Every process below `pid`, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def test_users_create_prints_token_last_and_stores_only_its_hash(tmp_path: Path) -> None:
    """The token is the last line of output; the database holds its hash, not the token."""
    out = subprocess.run(
        [*LAB, "users", "create", "alice", "--admin"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    token = out.strip().splitlines()[-1]
    assert len(token) >= 32
    raw = (tmp_path / "lab.db").read_bytes()
    assert token.encode() not in raw
    engine = make_engine(f"sqlite:///{tmp_path / 'lab.db'}")
    with engine.connect() as c:
        hashes = [r[0] for r in c.exec_driver_sql("SELECT token_hash FROM api_tokens")]
    engine.dispose()
    assert hash_token(token) in hashes


def test_up_restarts_a_killed_worker_and_sigterm_leaves_no_process(tmp_path: Path) -> None:
    """`fedgen-lab up` starts API, worker and dashboard; a worker killed with -9 is restarted
    while the API keeps serving; SIGTERM stops every one of them."""
    port, dash = _free_port(), _free_port()
    env = _env(tmp_path)
    log = tmp_path / "up.log"
    with log.open("wb") as out:
        up = subprocess.Popen(
            [*LAB, "up", "--port", str(port), "--dashboard-port", str(dash)],
            env=env,
            stdout=out,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def workers() -> list[int]:
        return [int(p) for p in re.findall(r"\[up\] started worker \(pid (\d+)\)", log.read_text())]

    def api_ready() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        deadline = time.monotonic() + 90
        ready = False
        while time.monotonic() < deadline and not ready:
            try:
                ready = api_ready() and (
                    httpx.get(f"http://127.0.0.1:{dash}/_stcore/health", timeout=2).status_code
                    == 200
                )
            except httpx.HTTPError:
                pass
            if not ready:
                time.sleep(0.5)
        assert ready, "API and dashboard did not come up"
        spawned = _descendants(up.pid)
        assert len(spawned) >= 3
        # One child killed by the kernel (kill -9): it alone restarts, the lab stays up.
        [worker] = workers()
        n = len(plan_slots(cores=usable_cores(), devices=visible_devices()))
        slots = n if n > 1 else 0  # the worker's slot processes (none with a single slot)
        os.kill(worker, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
            len(workers()) < 2 or len(_descendants(workers()[-1])) < slots
        ):
            time.sleep(0.2)
        assert len(workers()) == 2, log.read_text()
        assert len(_descendants(workers()[-1])) >= slots, log.read_text()
        assert (
            "[up] worker exited with -9 (SIGKILL); restarting in 1 s (restart 1)" in log.read_text()
        )
        assert up.poll() is None
        assert api_ready()
        spawned |= _descendants(up.pid)
        up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=60) == 0
        time.sleep(0.5)
        assert [p for p in spawned if _alive(p)] == []
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
