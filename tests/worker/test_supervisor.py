"""worker/supervisor.py with small real children: a dead child restarts alone, with back-off;
the `up` policy (only the API's exit stops all; its children: admin/serve.py,
tests/admin/test_serve.py); SIGTERM stops everything.

The supervisor runs in its own process (it installs signal handlers) and writes its lines to
a log file the tests read. Back-offs are checked through the printed delays, never the clock.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.procs import alive as _alive
from tests.support.procs import wait_for
from worker.supervisor import Backoff, exit_text

ROOT = Path(__file__).resolve().parents[2]
SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]

_SUPERVISE = """
import json, os, sys
from worker.supervisor import Backoff, supervise
cfg = json.loads(sys.argv[1])
specs = [(name, argv, dict(os.environ)) for name, argv in cfg["children"].items()]
sys.exit(supervise(specs, label="t", critical=cfg["critical"], die_with_parent=True,
                   backoff=Backoff(*cfg["backoff"]), grace_s=cfg["grace_s"]))
"""


def _wait(cond: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    wait_for(cond, what, timeout, poll=0.05)


class Supervised:
    """A running supervisor process and what it printed."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.proc = proc
        self.log = log

    def text(self) -> str:
        return self.log.read_text()

    def pids(self, name: str) -> list[int]:
        """Every pid `name` was started with, in order."""
        return [int(p) for p in re.findall(rf"\[t\] started {name} \(pid (\d+)\)", self.text())]

    def pid(self, name: str) -> int:
        """The pid of `name`'s latest start."""
        _wait(lambda: bool(self.pids(name)), f"{name} to start")
        return self.pids(name)[-1]

    def restarts(self, name: str) -> list[tuple[str, float, int]]:
        """(exit, delay, restart number) of each printed restart of `name`."""
        lines = re.findall(
            rf"\[t\] {name} exited with (.+?); restarting in (\S+) s \(restart (\d+)\)",
            self.text(),
        )
        return [(code, float(delay), int(n)) for code, delay, n in lines]


@pytest.fixture
def supervised(tmp_path: Path) -> Iterator[Callable[..., Supervised]]:
    """Start a supervisor over named children; kill whatever is left at the end."""
    started: list[Supervised] = []

    def start(
        children: dict[str, list[str]],
        *,
        critical: list[str] | None = None,
        backoff: tuple[float, float, float] = (0.05, 60.0, 60.0),
        grace_s: float = 5.0,
    ) -> Supervised:
        cfg = {
            "children": children,
            "critical": critical or [],
            "backoff": backoff,
            "grace_s": grace_s,
        }
        log = tmp_path / f"supervisor{len(started)}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-c", _SUPERVISE, json.dumps(cfg)],
                cwd=ROOT,
                env=dict(os.environ, PYTHONPATH=str(ROOT)),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        sup = Supervised(proc, log)
        started.append(sup)
        for name in children:
            sup.pid(name)
        return sup

    yield start
    for sup in started:
        if sup.proc.poll() is None:
            sup.proc.kill()  # its children die with it (parent-death signal)
            sup.proc.wait(10)
        for pid in re.findall(r"started \S+ \(pid (\d+)\)", sup.text()):
            if _alive(int(pid)):
                os.kill(int(pid), signal.SIGKILL)


def test_backoff_doubles_up_to_its_cap() -> None:
    """1, 2, 4 ... s, at most 60 s; the exponent cannot overflow."""
    # Execute
    delays = [Backoff().delay(i) for i in range(8)]
    # Assert
    assert delays == [1, 2, 4, 8, 16, 32, 60, 60]
    assert Backoff(first_s=0.5, max_s=3).delay(10**6) == 3


def test_exit_text_names_the_signal() -> None:
    """A negative return code is a signal, named; an exit code is printed as it is."""
    assert exit_text(-9) == "-9 (SIGKILL)"
    assert exit_text(-15) == "-15 (SIGTERM)"
    assert exit_text(3) == "3"
    assert exit_text(0) == "0"


def test_a_killed_child_is_restarted_and_the_others_keep_their_pids(
    supervised: Callable[..., Supervised],
) -> None:
    """SIGKILL one of three: it comes back with a new pid; the other two are untouched."""
    # Prepare
    sup = supervised({"a": SLEEP, "b": SLEEP, "c": SLEEP})
    before = {name: sup.pid(name) for name in "abc"}
    # Execute
    os.kill(before["b"], signal.SIGKILL)
    _wait(lambda: len(sup.pids("b")) == 2, "b to restart")
    # Assert
    assert sup.restarts("b") == [("-9 (SIGKILL)", 0.05, 1)]
    assert _alive(sup.pid("b"))
    assert sup.pid("b") != before["b"]
    assert (sup.pid("a"), sup.pid("c")) == (before["a"], before["c"])
    assert _alive(before["a"])
    assert _alive(before["c"])
    assert sup.proc.poll() is None
    # SIGTERM to the supervisor still stops every child, the restarted one included.
    sup.proc.send_signal(signal.SIGTERM)
    assert sup.proc.wait(timeout=30) == 0
    live = [before["a"], before["c"], sup.pid("b")]
    _wait(lambda: not any(_alive(p) for p in live), "every child to exit")


@pytest.mark.parametrize("code", [3, 0])
@pytest.mark.slow
def test_a_crash_looping_child_backs_off_and_the_others_keep_running(
    supervised: Callable[..., Supervised], code: int
) -> None:
    """A child that exits at once, again and again (with 0 too): the delays double to the cap."""
    # Prepare
    crash = [sys.executable, "-c", f"raise SystemExit({code})"]
    # Execute
    sup = supervised({"loop": crash, "steady": SLEEP}, backoff=(0.02, 0.16, 60.0))
    steady = sup.pid("steady")
    _wait(lambda: len(sup.restarts("loop")) >= 6, "six restarts of the crashing child")
    # Assert
    restarts = sup.restarts("loop")[:6]
    assert [c for c, _, _ in restarts] == [str(code)] * 6
    assert [d for _, d, _ in restarts] == [0.02, 0.04, 0.08, 0.16, 0.16, 0.16]
    assert [n for _, _, n in restarts] == [1, 2, 3, 4, 5, 6]
    assert sup.pids("steady") == [steady]
    assert _alive(steady)
    assert sup.proc.poll() is None


def test_sigterm_during_a_back_off_stops_all_and_starts_nothing(
    supervised: Callable[..., Supervised],
) -> None:
    """A child waiting 600 s to restart does not hold up SIGTERM, and is not started again."""
    # Prepare
    dead = [sys.executable, "-c", "raise SystemExit(1)"]
    sup = supervised({"dead": dead, "steady": SLEEP}, backoff=(600.0, 600.0, 60.0))
    _wait(lambda: sup.restarts("dead") == [("1", 600.0, 1)], "the first exit")
    # Execute
    sup.proc.send_signal(signal.SIGTERM)
    # Assert
    assert sup.proc.wait(timeout=30) == 0
    assert len(sup.pids("dead")) == 1
    _wait(lambda: not _alive(sup.pid("steady")), "steady to exit")


def test_a_child_ignoring_sigterm_is_killed_after_the_grace_period(
    supervised: Callable[..., Supervised],
) -> None:
    """Stopping: SIGTERM, then SIGKILL for what is left after the grace period."""
    # Prepare
    stubborn = [
        sys.executable,
        "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
        " print('armed', flush=True); time.sleep(600)",
    ]
    sup = supervised({"stubborn": stubborn}, grace_s=0.5)
    _wait(lambda: "armed" in sup.text(), "the child to ignore SIGTERM")
    # Execute
    sup.proc.send_signal(signal.SIGTERM)
    # Assert
    assert sup.proc.wait(timeout=30) == 0
    _wait(lambda: not _alive(sup.pid("stubborn")), "the stubborn child to be killed")


def test_up_policy_restarts_worker_and_dashboard_and_the_api_exit_stops_all(
    supervised: Callable[..., Supervised],
) -> None:
    """Under `up`: a dead worker or dashboard restarts, the API stays; the API's exit stops all."""
    # Prepare
    sup = supervised(
        {"api": SLEEP, "worker": SLEEP, "dashboard": SLEEP},
        critical=["api"],  # `up`'s (admin.serve.UP_CRITICAL)
    )
    api = sup.pid("api")
    # Execute: the worker and the dashboard die
    os.kill(sup.pid("worker"), signal.SIGKILL)
    os.kill(sup.pid("dashboard"), signal.SIGKILL)
    _wait(lambda: len(sup.pids("worker")) == len(sup.pids("dashboard")) == 2, "both to restart")
    # Assert
    assert sup.restarts("worker") == sup.restarts("dashboard") == [("-9 (SIGKILL)", 0.05, 1)]
    assert sup.pids("api") == [api]
    assert _alive(api)
    assert sup.proc.poll() is None
    # Execute: the API dies
    others = [sup.pid("worker"), sup.pid("dashboard")]
    os.kill(api, signal.SIGKILL)
    # Assert
    assert sup.proc.wait(timeout=30) != 0
    assert "[t] api exited with -9 (SIGKILL); stopping" in sup.text()
    _wait(lambda: not any(_alive(p) for p in others), "worker and dashboard to stop")
