"""Child processes under one supervisor: the slots of `fedgen-lab worker --slots N`
(worker/slots.py) and `fedgen-lab up`'s API, worker and dashboard (its children: admin/serve.py).

Each child gets its own process group, so stopping it also stops anything it spawned.
A child dies alone: a *critical* child (the API under `up`) that exits stops them all; any
other child (a worker slot; the worker and the dashboard under `up`) is restarted by itself,
with the same command line and environment, after a back-off (`Backoff`: 1, 2, 4 ... s, at
most 60 s, starting over once the child has stayed up 60 s); the others keep running. A
restartable child that exits 0 unasked is restarted too: only the supervisor decides that
its children stop (a slot that shut itself down would leave the machine a slot short).
SIGINT/SIGTERM to the supervisor stops them all (SIGTERM, then SIGKILL after a grace
period). A child started with `die_with_parent` is also killed by the kernel if the
supervisor dies without stopping it (kill -9). No process is left behind.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Collection
from dataclasses import dataclass

GRACE_S = 10.0
POLL_S = 0.2


def _say(msg: str) -> None:
    sys.stdout.write(msg + "\n")
    sys.stdout.flush()


@dataclass(frozen=True)
class Backoff:
    """Restart delays: `first_s`, doubling with each quick exit in a row, at most `max_s`;
    a child that stayed up `reset_after_s` starts again from `first_s`."""

    first_s: float = 1.0
    max_s: float = 60.0
    reset_after_s: float = 60.0

    def delay(self, streak: int) -> float:
        """The wait before the restart that follows `streak` earlier quick exits."""
        return min(self.max_s, self.first_s * 2.0 ** min(streak, 32))


@dataclass
class Child:
    """A named child: its command, its policy, its current process (None: waiting to restart)."""

    name: str
    argv: list[str]
    env: dict[str, str]
    critical: bool = False
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restarts: int = 0
    streak: int = 0  # quick exits in a row: the back-off's exponent
    restart_at: float = 0.0  # when a waiting child starts again (monotonic clock)


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGKILL me when the parent dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):  # not Linux: stop_all still stops children
        pass


def _start(child: Child, *, label: str, die_with_parent: bool) -> None:
    child.proc = subprocess.Popen(
        child.argv,
        env=child.env,
        start_new_session=True,
        preexec_fn=_die_with_parent if die_with_parent else None,
    )
    child.started_at = time.monotonic()
    how = f": {' '.join(child.argv)}" if child.restarts == 0 else f", restart {child.restarts}"
    _say(f"[{label}] started {child.name} (pid {child.proc.pid}){how}")


def _signal_group(child: Child, sig: int) -> None:
    if child.proc is None:
        return
    try:
        os.killpg(child.proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def exit_text(code: int) -> str:
    """'-9 (SIGKILL)' for a signal, '3' for an exit code."""
    if code < 0:
        try:
            return f"{code} ({signal.Signals(-code).name})"
        except ValueError:
            pass
    return str(code)


def stop_all(children: list[Child], grace_s: float = GRACE_S) -> None:
    """SIGTERM every child's group, wait, then SIGKILL what is left."""
    for c in children:
        _signal_group(c, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for c in children:
        try:
            if c.proc is not None:
                c.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for c in children:
        _signal_group(c, signal.SIGKILL)  # also reaps grandchildren left in the group
        if c.proc is not None and c.proc.poll() is None:
            c.proc.wait(timeout=5)


def _schedule_restart(child: Child, now: float, backoff: Backoff) -> float:
    """Mark a dead child for restart after its back-off; the delay."""
    if now - child.started_at >= backoff.reset_after_s:
        child.streak = 0
    delay = backoff.delay(child.streak)
    child.streak += 1
    child.restarts += 1
    child.restart_at = now + delay
    child.proc = None
    return delay


def _check(
    children: list[Child], *, label: str, backoff: Backoff, die_with_parent: bool
) -> int | None:
    """One look at every child: restart the due ones; the exit code if a critical one exited."""
    now = time.monotonic()
    for c in children:
        if c.proc is None:
            if now >= c.restart_at:
                try:
                    _start(c, label=label, die_with_parent=die_with_parent)
                except OSError as exc:  # e.g. fork failing under memory pressure: try again
                    c.started_at = now
                    delay = _schedule_restart(c, now, backoff)
                    _say(f"[{label}] could not start {c.name} ({exc}); retrying in {delay:g} s")
            continue
        code = c.proc.poll()
        if code is None:
            continue
        _signal_group(c, signal.SIGKILL)  # whatever it left in its group goes with it
        if c.critical:
            _say(f"[{label}] {c.name} exited with {exit_text(code)}; stopping")
            return code or 1
        delay = _schedule_restart(c, now, backoff)
        _say(
            f"[{label}] {c.name} exited with {exit_text(code)}; "
            f"restarting in {delay:g} s (restart {c.restarts})"
        )
    return None


def supervise(
    specs: list[tuple[str, list[str], dict[str, str]]],
    *,
    label: str,
    critical: Collection[str] = (),
    die_with_parent: bool = False,
    banner: str | None = None,
    backoff: Backoff = Backoff(),
    grace_s: float = GRACE_S,
) -> int:
    """Start every (name, argv, env) and keep them running until a signal, or until a child
    named in `critical` exits; then stop all. The exit code: 0 after a signal, else the
    critical child's (1 if it exited 0)."""
    stopping = {"sig": 0}

    def on_signal(signum: int, _frame: object) -> None:
        stopping["sig"] = signum

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    children = [Child(name, argv, env, critical=name in critical) for name, argv, env in specs]
    code = 0
    try:
        for c in children:
            _start(c, label=label, die_with_parent=die_with_parent)
        if banner:
            _say(f"[{label}] {banner}")
        while not stopping["sig"]:
            exited = _check(children, label=label, backoff=backoff, die_with_parent=die_with_parent)
            if exited is not None:
                code = exited
                break
            time.sleep(POLL_S)
    finally:
        _say(f"[{label}] stopping all processes")
        stop_all(children, grace_s)
        for s, h in old.items():
            signal.signal(s, h)
    return code
