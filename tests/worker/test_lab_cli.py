"""`fedgen-lab` as a user types it: users create, db upgrade, and `up` stopping everything."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from api.db import make_engine
from api.security import hash_token

pytestmark = pytest.mark.slow
LAB = [sys.executable, "-m", "worker.lab_cli"]


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


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


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


def test_up_serves_and_sigterm_leaves_no_process(tmp_path: Path) -> None:
    """`fedgen-lab up` starts API, worker and dashboard; SIGTERM stops every one of them."""
    port, dash = _free_port(), _free_port()
    env = _env(tmp_path)
    up = subprocess.Popen(
        [*LAB, "up", "--port", str(port), "--dashboard-port", str(dash)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        ready = False
        while time.monotonic() < deadline and not ready:
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2).status_code == 200
                ready = (
                    ready
                    and httpx.get(f"http://127.0.0.1:{dash}/_stcore/health", timeout=2).status_code
                    == 200
                )
            except httpx.HTTPError:
                time.sleep(0.5)
        assert ready, "API and dashboard did not come up"
        spawned = _descendants(up.pid)
        assert len(spawned) >= 3
        up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=60) == 0
        time.sleep(0.5)
        assert [p for p in spawned if _alive(p)] == []
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGKILL)
