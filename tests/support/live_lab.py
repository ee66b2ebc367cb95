"""A whole lab for the client's tests: the API (`fedgen-lab api`) and one worker as child
processes on Postgres (the session's scratch schema) and Redis (a unique queue prefix), and
an admin's token. Each child has its own process group and is stopped by its own id."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lab.db import make_engine
from tests.support.dashboard_lab import free_port
from tests.support.needs import needs
from tests.support.postgres import truncate
from tests.support.stack import _stop, _wait_http
from tests.support.workers import redis_ok

ROOT = Path(__file__).resolve().parents[2]
LAB = [sys.executable, "-m", "admin"]


@dataclass
class LiveLab:
    """A running lab: the API's URL, a member's token, the environment a CLI child needs."""

    url: str
    token: str
    env: dict[str, str]
    home: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def cli_env(self) -> dict[str, str]:
        """The environment of a `fedgen` command that talks to this lab."""
        return {**self.env, "FEDGEN_API_URL": self.url, "FEDGEN_TOKEN": self.token}


@contextmanager
def live_lab(pg_url: str, home: Path, *, worker: bool = True) -> Iterator[LiveLab]:
    """Start the API and (by default) one single-slot worker on Postgres + Redis."""
    needs(redis_ok(), "Redis at 127.0.0.1:6379")
    env = dict(
        os.environ,
        FEDGEN_DATABASE_URL=pg_url,
        FEDGEN_BROKER_URL="redis://127.0.0.1:6379/0",
        FEDGEN_HOME=str(home),
        FEDGEN_QUEUE_PREFIX=f"c{uuid.uuid4().hex[:8]}-",
        FEDGEN_REAPER_S="1",
        PYTHONPATH=str(ROOT),
        CUDA_VISIBLE_DEVICES="",
    )
    home.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(
        [*LAB, "users", "create", f"m{uuid.uuid4().hex[:6]}", "--admin"],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    token = out.stdout.strip().splitlines()[-1]
    port = free_port()
    lab = LiveLab(f"http://127.0.0.1:{port}", token, env, home)

    def start(name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (home / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        lab.procs.append(proc)
        return proc

    try:
        api = start("api", [*LAB, "api", "--port", str(port)])
        _wait_http(f"{lab.url}/api/v1/health", api)
        if worker:
            start("worker", [*LAB, "worker", "--queues", "cpu", "--loglevel", "WARNING"])
        yield lab
    finally:
        for proc in reversed(lab.procs):
            _stop(proc)
        engine = make_engine(pg_url, pool_size=1)
        truncate(engine)  # the session's schema is shared: leave it empty
        engine.dispose()
