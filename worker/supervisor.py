"""`fedgen-lab up`: API + worker (+ dashboard) as child processes, all stopped together.

Each child gets its own process group, so stopping it also stops anything it
spawned; SIGINT/SIGTERM to the parent, or any child exiting, stops them all
(SIGTERM, then SIGKILL after a grace period). No process is left behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

GRACE_S = 10.0
# Found through the package, so `fedgen-lab up` works from any folder.
DASHBOARD_APP = Path(__file__).resolve().parents[1] / "dashboard" / "streamlit_app.py"


def _say(msg: str) -> None:
    sys.stdout.write(msg + "\n")
    sys.stdout.flush()


@dataclass
class Child:
    """A named child process."""

    name: str
    proc: subprocess.Popen[bytes]


def _start(name: str, argv: list[str], env: dict[str, str]) -> Child:
    _say(f"[up] starting {name}: {' '.join(argv)}")
    return Child(name, subprocess.Popen(argv, env=env, start_new_session=True))


def _signal_group(child: Child, sig: int) -> None:
    try:
        os.killpg(child.proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_all(children: list[Child], grace_s: float = GRACE_S) -> None:
    """SIGTERM every child's group, wait, then SIGKILL what is left."""
    for c in children:
        _signal_group(c, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for c in children:
        try:
            c.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for c in children:
        _signal_group(c, signal.SIGKILL)  # also reaps grandchildren left in the group
        if c.proc.poll() is None:
            c.proc.wait(timeout=5)


def commands(
    host: str, port: int, dashboard_port: int, dashboard: bool
) -> list[tuple[str, list[str]]]:
    """The child command lines."""
    py = sys.executable
    out = [
        (
            "api",
            [
                py,
                "-m",
                "worker.lab_cli",
                "api",
                "--host",
                host,
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
        ),
        (
            "worker",
            [
                py,
                "-m",
                "worker.lab_cli",
                "worker",
                "--queues",
                "cpu,gpu",
                "--loglevel",
                "WARNING",
                "--quiet",
            ],  # fmt: skip
        ),
    ]
    app = DASHBOARD_APP
    if dashboard and app.exists():
        out.append(
            (
                "dashboard",
                [
                    py,
                    "-m",
                    "streamlit",
                    "run",
                    str(app),
                    "--server.port",
                    str(dashboard_port),
                    "--server.address",
                    host,
                    "--server.headless",
                    "true",
                    "--browser.gatherUsageStats",
                    "false",
                    "--client.toolbarMode",
                    "minimal",
                ],
            )
        )
    return out


def run_up(host: str, port: int, dashboard_port: int, dashboard: bool) -> int:
    """Start everything, wait for a signal or a child's exit, stop everything; the exit code."""
    env = dict(os.environ, FEDGEN_AUTO_UPGRADE="0", FEDGEN_API_URL=f"http://{host}:{port}/api/v1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    stopping = {"sig": 0}

    def on_signal(signum: int, _frame: object) -> None:
        stopping["sig"] = signum

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    children: list[Child] = []
    code = 0
    try:
        for name, argv in commands(host, port, dashboard_port, dashboard):
            children.append(_start(name, argv, env))
        _say(f"[up] API http://{host}:{port}/api/v1  docs http://{host}:{port}/docs")
        while not stopping["sig"]:
            dead = [c for c in children if c.proc.poll() is not None]
            if dead:
                _say(f"[up] {dead[0].name} exited with {dead[0].proc.returncode}; stopping")
                code = dead[0].proc.returncode or 1
                break
            time.sleep(0.2)
    finally:
        _say("[up] stopping all processes")
        stop_all(children)
        for s, h in old.items():
            signal.signal(s, h)
    return code
