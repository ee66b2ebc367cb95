"""Screenshots of the Lab page (empty, then two live worker slots with a run), the Runs page
with a run no live worker can take, and the Live page of a run resumed on another slot.

A real `fedgen-lab worker --slots 2` runs a FedGen run on the synthetic dataset; its slot is
frozen (SIGSTOP) mid-run, so the run resumes from its last checkpoint on the other slot (two
segments). An emnist-letters run waits meanwhile: no worker has that dataset.

Run: `.venv/bin/python -m scripts.screens.lab_screenshots OUT_DIR` (a few minutes, CPU only).
"""

from __future__ import annotations

import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.support.stack import Stack, browser_page, lab_stack

VICTIM = {
    "data": {"name": "synthetic", "synthetic_samples": 1000},
    "partition": {"num_users": 10, "alpha": 0.1},
    "algorithm": {"name": "fedgen"},
    "rounds": 200,
    "users_per_round": 3,
    "local_steps": 5,
    "batch_size": 16,
    "lr": 0.005,
    "checkpoint_every": 5,
}
EMNIST = {
    "data": {"name": "emnist-letters"},
    "partition": {"num_users": 10, "alpha": 0.1},
    "rounds": 10,
    "users_per_round": 3,
}
FAST = {"FEDGEN_HEARTBEAT_S": "1", "FEDGEN_REAPER_S": "1"}  # a dead slot's run resumes in seconds


def _api(stack: Stack) -> httpx.Client:
    headers = {"Authorization": f"Bearer {stack.token}"}
    return httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30)


def _wait(what: str, check: Callable[[], Any], timeout: float = 300) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(1)
    raise TimeoutError(f"waited {timeout:.0f} s for {what}")


def _shot(page: Any, url: str, ready: str, path: Path, settle_ms: int = 2500) -> None:
    page.goto(url)
    page.locator(ready).first.wait_for(timeout=60_000)
    page.wait_for_timeout(settle_ms)
    page.screenshot(path=str(path), full_page=True)


def _slot_pid(log: Path, slot: str) -> int:
    """The pid the worker's supervisor last started `slot` with."""
    pids = re.findall(rf"\[worker\] started {slot} \(pid (\d+)\)", log.read_text())
    if not pids:
        raise RuntimeError(f"no pid of {slot} in {log}")
    return int(pids[-1])


def empty(tmp: Path, out: Path) -> None:
    """The Lab page with no worker (a queued run waits for one)."""
    with lab_stack(tmp / "empty", worker=False) as stack, _api(stack) as c:
        c.post("/runs", json={"spec": {**VICTIM, "rounds": 5}}).raise_for_status()
        with browser_page(tmp / "profile-empty", 1600, 800) as page:
            _shot(
                page,
                f"{stack.dashboard_url}/?page=lab",
                "text=No live worker",
                out / "lab-empty.png",
            )


def busy(tmp: Path, out: Path) -> None:
    """Two slots, one running a FedGen run that is then killed and resumed on the other."""
    args = ["--slots", "2", "--threads", "1", "--name", "cpu@%h"]
    with lab_stack(tmp / "home", worker_args=args, env_extra=FAST) as stack, _api(stack) as c:
        _wait("two live worker slots", lambda: len(c.get("/workers").json()["workers"]) >= 2, 180)
        victim = c.post("/runs", json={"spec": VICTIM}).raise_for_status().json()["id"]
        c.post("/runs", json={"spec": EMNIST}).raise_for_status()

        def run() -> dict[str, Any]:
            return c.get(f"/runs/{victim}").raise_for_status().json()

        first = _wait("the run past round 8", lambda: (r := run())["current_round"] >= 8 and r)
        with browser_page(tmp / "profile", 1600, 900) as page:
            dash = stack.dashboard_url
            _shot(page, f"{dash}/?page=lab", '[data-testid="stDataFrame"]', out / "lab-workers.png")
            page.set_viewport_size({"width": 2300, "height": 900})  # every column of the table
            _shot(
                page, f"{dash}/?page=runs", '[data-testid="stDataFrame"]', out / "runs-waiting.png"
            )
            page.set_viewport_size({"width": 1600, "height": 900})
            slot = re.search(r"slot\d+", first["worker"] or "")
            assert slot, first
            # Frozen, not killed: the supervisor would restart a dead slot at once and the run
            # could resume on it; a frozen one misses its heartbeats, so the other slot takes it.
            pid = _slot_pid(stack.home / "logs" / "worker.log", slot.group(0))
            os.kill(pid, signal.SIGSTOP)
            try:
                resumed = _wait(
                    "the run to resume and compute 3 rounds",
                    lambda: (
                        len((r := run())["segments"]) >= 2
                        and r["current_round"] >= r["segments"][-1]["start_round"] + 3
                        and r
                    ),
                )
            finally:
                os.kill(pid, signal.SIGKILL)  # the supervisor starts a fresh slot in its place
            sys.stdout.write(f"segments: {resumed['segments']}\n")
            _shot(
                page,
                f"{dash}/?page=live&run={victim}",
                '[data-testid="stExpander"]',
                out / "live-resumed.png",
                settle_ms=6000,
            )


def main(out: Path) -> int:
    """All four screenshots into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        empty(Path(tmp), out)
        busy(Path(tmp), out)
    sys.stdout.write(f"wrote {out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("shots")))
