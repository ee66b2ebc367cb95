"""The real `fedgen-lab api` process (admin/cli.py, as docker-compose, the Dockerfile and
`fedgen-lab up` start it) on a loopback port and a scratch PostgreSQL schema, for tests that
talk to it from outside over HTTP: members `alice` and `admin` and their tokens.

PostgreSQL, not SQLite: the strings it cannot hold (NUL) are among what these tests send. No
reachable server is a skip locally and a failure in CI (tests/support/postgres.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from lab.db import make_engine, make_sessionmaker, session_scope
from lab.repository import users as users_repo
from migrations.apply import upgrade
from tests.support.dashboard_lab import free_port
from tests.support.postgres import scratch_schema
from tests.support.procs import wait_for

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ApiProcess:
    """A running `fedgen-lab api`: its /api/v1 URL, the users' tokens, its log file."""

    url: str
    tokens: dict[str, str]
    log: Path

    def headers(self, who: str, **extra: str) -> dict[str, str]:
        """The Authorization header of `who` (a name in `tokens`, or a raw token), and more."""
        return {"Authorization": f"Bearer {self.tokens.get(who, who)}", **extra}

    def client(self) -> httpx.Client:
        """An httpx client on the API's /api/v1."""
        return httpx.Client(base_url=self.url, timeout=30)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process's own group, SIGKILL if it has not exited 10 s later."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            return
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            continue


def _up(url: str, proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        raise RuntimeError(f"fedgen-lab api exited with {proc.returncode}")
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


@contextmanager
def api_process(home: Path, **env_extra: str) -> Iterator[ApiProcess]:
    """Start `fedgen-lab api --host 127.0.0.1` with FEDGEN_HOME=`home` on a fresh, migrated
    schema (more settings as FEDGEN_* in `env_extra`); stop it (by its own id) on exit."""
    with scratch_schema("api_") as (db_url, _schema):
        upgrade(db_url)
        engine = make_engine(db_url, pool_size=1)
        with session_scope(make_sessionmaker(engine)) as s:
            tokens = {
                name: users_repo.create_user(s, name, name == "admin")[1]
                for name in ("alice", "admin")
            }
        engine.dispose()
        env = {
            **os.environ,
            "FEDGEN_HOME": str(home),
            "FEDGEN_DATABASE_URL": db_url,
            "FEDGEN_BROKER_URL": "memory://",
            "FEDGEN_AUTO_UPGRADE": "0",
            "FEDGEN_TRUSTED_PROXIES": "",
            "PYTHONPATH": str(ROOT),
            **env_extra,
        }
        port = free_port()
        log = home / "api.log"
        argv = [sys.executable, "-m", "admin", "api", "--host", "127.0.0.1"]
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [*argv, "--port", str(port), "--log-level", "warning"],
                env=env,
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        url = f"http://127.0.0.1:{port}/api/v1"
        try:
            wait_for(lambda: _up(url, proc), "fedgen-lab api to answer /health", timeout=120)
            yield ApiProcess(url, tokens, log)
        finally:
            _stop(proc)
