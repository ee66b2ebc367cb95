"""The whole lab on loopback as child processes: API, Celery worker and the Streamlit dashboard.

Used by the browser test and by `python -m scripts.screens.screenshots`. Every child gets
its own process group and is stopped (SIGTERM, then SIGKILL) by its own id.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.dashboard_lab import free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


@dataclass
class Stack:
    """URLs and credentials of a running lab, and its child processes."""

    api_url: str
    dashboard_url: str
    token: str
    home: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)


def execute_here(stack: Stack, run_id: str, runner: Any, worker_name: str = "w1@lab-host") -> str:
    """Run `run_id` through the worker's execute_run in this process, on the stack's database;
    "died" when the runner raises Killed (the run keeps its lease, as a dead worker's does)."""
    from lab.config import Settings
    from lab.db import make_engine, make_sessionmaker
    from tests.support.fakes import Killed
    from worker.claimed_run import execute_run

    settings = Settings(home=stack.home, database_url=f"sqlite:///{stack.home / 'lab.db'}")
    engine = make_engine(settings.database_url)
    try:
        return execute_run(
            run_id,
            make_sessionmaker(engine),
            runner=runner,
            settings=settings,
            worker_name=worker_name,
        )
    except Killed:
        return "died"
    finally:
        engine.dispose()


def _wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    raise TimeoutError(f"{url} did not come up")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    except ProcessLookupError:
        pass


@contextmanager
def lab_stack(
    home: Path,
    *,
    worker: bool = True,
    worker_args: list[str] | None = None,
    env_extra: dict[str, str] | None = None,
    dashboard_token: bool = True,
) -> Iterator[Stack]:
    """Start API (+ worker) + dashboard with FEDGEN_HOME=`home`; stop them all on exit.

    `worker_args`: more `fedgen-lab worker` options (e.g. `--slots 2`); `env_extra`: more
    environment for every process (e.g. a short FEDGEN_HEARTBEAT_S); `dashboard_token=False`:
    the dashboard gets no FEDGEN_TOKEN (as in docker-compose), so each browser signs in.
    """
    env = {
        **os.environ,
        "FEDGEN_HOME": str(home),
        "PYTHONPATH": str(ROOT),
        "CUDA_VISIBLE_DEVICES": "",
        **(env_extra or {}),
    }
    env.pop("FEDGEN_DATABASE_URL", None)
    env.pop("FEDGEN_BROKER_URL", None)
    logs = home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    fedgen_lab = [
        sys.executable,
        "-c",
        "import sys; from admin.cli import main; sys.exit(main())",
    ]
    out = subprocess.run(
        [*fedgen_lab, "users", "create", "e2e", "--admin"],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    token = out.stdout.strip().splitlines()[-1]
    api_port, dash_port = free_port(), free_port()
    stack = Stack(f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{dash_port}", token, home)

    def start(
        name: str, argv: list[str], extra: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log = (logs / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            argv,
            env={**env, **(extra or {})},
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        stack.procs.append(proc)
        return proc

    try:
        api = start("api", [*fedgen_lab, "api", "--port", str(api_port)])
        _wait_http(f"{stack.api_url}/api/v1/health", api)
        if worker:
            worker_flags = ["--queues", "cpu", "--loglevel", "WARNING", "--embedded"]
            start("worker", [*fedgen_lab, "worker", *worker_flags, *(worker_args or [])])
        app = str(ROOT / "dashboard" / "streamlit_app.py")
        options = {
            "server.port": str(dash_port),
            "server.address": "127.0.0.1",
            "server.headless": "true",
            "browser.gatherUsageStats": "false",
            "server.fileWatcherType": "none",
        }
        dash_flags = [arg for name, value in options.items() for arg in (f"--{name}", value)]
        dash = start(
            "dashboard",
            [sys.executable, "-m", "streamlit", "run", app, *dash_flags],
            {"FEDGEN_API_URL": stack.api_url, "FEDGEN_TOKEN": token if dashboard_token else ""},
        )
        _wait_http(f"{stack.dashboard_url}/_stcore/health", dash)
        yield stack
    finally:
        for proc in reversed(stack.procs):
            _stop(proc)


@contextmanager
def browser_page(profile: Path, width: int = 1500, height: int = 1000) -> Iterator[object]:
    """A Playwright page in headless Debian Chromium with a fresh profile (no downloaded browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": width, "height": height},
        )
        try:
            yield ctx.pages[0] if ctx.pages else ctx.new_page()
        finally:
            ctx.close()
