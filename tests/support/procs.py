"""Helpers for tests that start real processes: is a pid alive, wait for a condition."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, exited but not yet reaped, counts as gone)."""
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(
    cond: Callable[[], bool], what: str, timeout: float = 240.0, poll: float = 0.3
) -> None:
    """Poll `cond` until it holds; AssertionError naming `what` after `timeout` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(poll)
    raise AssertionError(f"gave up waiting for {what}")
