"""Real worker processes in tests: is Redis up, start `fedgen-lab worker`, read its slots' pids
from its log, wait for a condition."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
WORKER = [sys.executable, "-m", "worker"]  # the worker's own start (`fedgen-lab worker`)


def redis_ok() -> bool:
    """Redis answers at 127.0.0.1:6379."""
    try:
        import redis

        return bool(redis.Redis(host="127.0.0.1", port=6379, socket_timeout=1).ping())
    except Exception:
        return False


def start_worker(lab: dict, *args: str) -> subprocess.Popen[bytes]:
    """The worker (`python -m worker`, as `fedgen-lab worker`) on the cpu queue of `lab` (the pg_lab fixture), logging to its log."""
    log = lab["log"].open("wb")
    return subprocess.Popen(
        [*WORKER, "--queues", "cpu", "--loglevel", "INFO", *args],
        env=lab["env"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def slot_pids(log: Path, slot: str = r"slot\d+") -> list[int]:
    """The pids slots were started with, in order (restarts included)."""
    pattern = rf"\[worker\] started {slot} \(pid (\d+)\)"
    return [int(p) for p in re.findall(pattern, log.read_text())]


def until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    """`check()`'s first truthy answer, asked every 0.3 s; an AssertionError after `timeout`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
