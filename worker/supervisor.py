"""Child processes stopped together: `fedgen-lab up` (API + worker + dashboard) and the
slots of `fedgen-lab worker --slots N` (worker/slots.py).

Each child gets its own process group, so stopping it also stops anything it
spawned; SIGINT/SIGTERM to the parent, or any child exiting, stops them all
(SIGTERM, then SIGKILL after a grace period). A child started with
`die_with_parent` is also killed by the kernel if the parent dies without
stopping it (kill -9). No process is left behind.
"""

from __future__ import annotations

import ctypes
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


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGKILL me when the parent dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):  # not Linux: stop_all still stops children
        pass


def _start(
    name: str,
    argv: list[str],
    env: dict[str, str],
    *,
    label: str = "up",
    die_with_parent: bool = False,
) -> Child:
    proc = subprocess.Popen(
        argv,
        env=env,
        start_new_session=True,
        preexec_fn=_die_with_parent if die_with_parent else None,
    )
    _say(f"[{label}] started {name} (pid {proc.pid}): {' '.join(argv)}")
    return Child(name, proc)


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


def supervise(
    specs: list[tuple[str, list[str], dict[str, str]]],
    *,
    label: str,
    die_with_parent: bool = False,
    banner: str | None = None,
) -> int:
    """Start every (name, argv, env), wait for a signal or a child's exit, stop all; the exit code."""
    stopping = {"sig": 0}

    def on_signal(signum: int, _frame: object) -> None:
        stopping["sig"] = signum

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    children: list[Child] = []
    code = 0
    try:
        for name, argv, env in specs:
            children.append(_start(name, argv, env, label=label, die_with_parent=die_with_parent))
        if banner:
            _say(f"[{label}] {banner}")
        while not stopping["sig"]:
            dead = [c for c in children if c.proc.poll() is not None]
            if dead:
                _say(f"[{label}] {dead[0].name} exited with {dead[0].proc.returncode}; stopping")
                code = dead[0].proc.returncode or 1
                break
            time.sleep(0.2)
    finally:
        _say(f"[{label}] stopping all processes")
        stop_all(children)
        for s, h in old.items():
            signal.signal(s, h)
    return code


def run_up(host: str, port: int, dashboard_port: int, dashboard: bool) -> int:
    """Start everything, wait for a signal or a child's exit, stop everything; the exit code."""
    env = dict(os.environ, FEDGEN_AUTO_UPGRADE="0", FEDGEN_API_URL=f"http://{host}:{port}/api/v1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    specs = [(name, argv, env) for name, argv in commands(host, port, dashboard_port, dashboard)]
    return supervise(
        specs, label="up", banner=f"API http://{host}:{port}/api/v1  docs http://{host}:{port}/docs"
    )
