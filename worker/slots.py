"""`fedgen-lab worker --slots N` (`python -m worker --slots N`, worker/main.py): how many runs
one machine takes at once, and their processes.

A slot is one Celery worker process (solo pool, prefetch 1, acks_late: one run at a
time) with its share of the machine: FEDGEN_TORCH_THREADS / OMP_NUM_THREADS = cores
// slots on CPU (worker/claimed_run.py sets torch's threads from it before a run), and
one GPU through CUDA_VISIBLE_DEVICES on a GPU machine. Default: one slot per core
with one thread each; one slot per GPU (`--slots-per-device K` packs K runs on a
GPU). More than one slot turns the command into a supervisor (worker/supervisor.py):
each slot in its own process group; a slot that dies (killed for memory, crashed) is
restarted alone with its name, threads and GPU, after a back-off, while the others keep
running; SIGTERM stops all, nothing is left behind.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

MAX_SLOTS = 256
THREADS_ENV = "FEDGEN_TORCH_THREADS"


class SlotError(ValueError):
    """Flags that do not describe a set of slots (the message names the flags)."""


@dataclass(frozen=True)
class Slot:
    """One worker process: its name, torch threads and GPU (None: CPU only)."""

    name: str
    threads: int
    device: str | None = None

    def env(self) -> dict[str, str]:
        """The environment this slot's process runs with (on top of the parent's)."""
        out = {THREADS_ENV: str(self.threads), "OMP_NUM_THREADS": str(self.threads)}
        out["MKL_NUM_THREADS"] = str(self.threads)
        if self.device is not None:
            out["CUDA_VISIBLE_DEVICES"] = self.device
        return out


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, not the whole machine)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def parse_devices(text: str) -> list[str]:
    """'0,1' -> ['0', '1'] (indices or GPU UUIDs, as CUDA_VISIBLE_DEVICES takes them)."""
    devices = [d.strip() for d in text.split(",") if d.strip()]
    if not devices:
        raise SlotError(f"--devices: give a comma list of GPU ids such as 0,1; got {text!r}")
    if len(set(devices)) != len(devices):
        raise SlotError(f"--devices: a GPU is listed twice in {text!r}")
    return devices


def visible_devices() -> list[str] | None:
    """The GPUs CUDA_VISIBLE_DEVICES gives this process, or None when it gives none."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if visible.strip() in ("", "-1"):
        return None
    return parse_devices(visible)


def plan_slots(
    *,
    cores: int,
    slots: int | None = None,
    devices: list[str] | None = None,
    per_device: int | None = None,
    threads: int | None = None,
) -> list[Slot]:
    """The slots for these flags; SlotError names the flag that is out of range."""
    if slots is not None and not 1 <= slots <= MAX_SLOTS:
        raise SlotError(f"--slots must be between 1 and {MAX_SLOTS}, got {slots}")
    if threads is not None and threads < 1:
        raise SlotError(f"--threads must be >= 1, got {threads}")
    if per_device is not None:
        if devices is None:
            raise SlotError("--slots-per-device needs GPUs: --devices or CUDA_VISIBLE_DEVICES")
        if not 1 <= per_device <= MAX_SLOTS:
            raise SlotError(
                f"--slots-per-device must be between 1 and {MAX_SLOTS}, got {per_device}"
            )
    if devices:
        k = per_device or 1
        n = len(devices) * k
        if slots is not None and slots != n:
            raise SlotError(
                f"--slots {slots} disagrees with {len(devices)} GPU(s) x --slots-per-device {k}"
                f" = {n}; give one or the other"
            )
        if n > MAX_SLOTS:
            raise SlotError(f"{n} slots (GPUs x --slots-per-device) is over {MAX_SLOTS}")
        each = threads or max(1, cores // n)
        return [Slot(f"slot{i}", each, devices[i // k]) for i in range(n)]
    n = slots if slots is not None else max(1, cores)
    each = threads or max(1, cores // n)
    return [Slot(f"slot{i}", each) for i in range(min(n, MAX_SLOTS))]


def slot_commands(
    plan: list[Slot],
    *,
    queues: str,
    name: str,
    pool: str,
    concurrency: int,
    loglevel: str,
    quiet: bool = False,
) -> list[tuple[str, list[str], dict[str, str]]]:
    """(name, argv, env) of each slot's single-slot `python -m worker` process.

    Every slot registers itself with the dispatcher (one slot each); only one process runs a
    dispatch pass at a time (the dispatcher's lease).
    """
    base, _, host = name.partition("@")
    out = []
    for slot in plan:
        argv = [
            sys.executable,
            "-m",
            "worker",
            "--slots",
            "1",
            "--threads",
            str(slot.threads),
            "--queues",
            queues,
            "--name",
            f"{base}-{slot.name}@{host or '%h'}",
            "--pool",
            pool,
            "--concurrency",
            str(concurrency),
            "--loglevel",
            loglevel,
            *(["--quiet"] if quiet else []),
        ]
        out.append((slot.name, argv, dict(os.environ, **slot.env())))
    return out
