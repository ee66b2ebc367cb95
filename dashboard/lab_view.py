"""Pure helpers of the Lab page: GET /workers as table rows, the summary line, code versions.

One row per live worker process (a slot): where it runs, what it computes on, which code and
datasets it has, what it runs now and when it last said it is alive. No Streamlit.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime, tzinfo
from typing import Any

import pandas as pd

from dashboard.times import DASH, relative, when
from vocab.run_names import base_name
from vocab.schemas.runs import RunPublic
from vocab.schemas.workers import WorkerDevice, WorkerPublic, WorkerRun, WorkersPublic

TABLE_COLUMNS = [
    "host",
    "slot",
    "queues",
    "devices",
    "threads",
    "code version",
    "datasets",
    "running",
    "started",
    "heartbeat",
]
COMMIT_CHARS = 12
GIB = 2**30


def plural(n: int, word: str) -> str:
    """`1 worker`, `3 workers`."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def short_version(value: str | None) -> str:
    """`git:<40 hex>+dirty` -> `git:<12 hex>+dirty`; `src:<hash>` -> `src:<12 hex>`; a dash
    for None. Anything else is kept as it is."""
    if not value:
        return DASH
    m = re.fullmatch(r"(?P<kind>[a-z]+:)(?P<hash>[0-9a-fA-F]+)(?P<rest>\+.*)?", value)
    if not m:
        return value
    return f"{m['kind']}{m['hash'][:COMMIT_CHARS]}{m['rest'] or ''}"


def slot_of(name: str) -> str:
    """The slot part of a node name (`cpu-slot0@w1` -> `cpu-slot0`)."""
    return name.partition("@")[0] or name


def worker_of(worker: WorkerPublic) -> str:
    """The `fedgen-lab worker` a slot process belongs to: its node name without the slot
    (`cpu-slot1@w1` -> `cpu@w1`). `--slots N` starts N processes named `<name>-slot<i>@host`,
    so N rows are one worker with N slots."""
    base, _, host = worker.name.partition("@")
    return f"{re.sub(r'-slot[0-9]+$', '', base)}@{host_of(worker)}"


def queue_words(worker: WorkerPublic) -> str:
    """The runs a worker takes, as people say it: `cpu`, `gpu`, `cpu, gpu`.

    A broker queue name is the lab's FEDGEN_QUEUE_PREFIX and the device kind (`nc5cpu`);
    a worker's own queue (`…worker.<name>`, where the dispatcher sends it runs) is internal.
    """
    kinds = []
    for q in worker.queues:
        if "worker." in q:
            continue
        kind = "gpu" if q.endswith("gpu") else "cpu" if q.endswith("cpu") else q
        if kind not in kinds:
            kinds.append(kind)
    return ", ".join(kinds) or DASH


def host_of(worker: WorkerPublic) -> str:
    """The worker's host, else the host part of its node name."""
    return worker.host or worker.name.partition("@")[2] or DASH


def gib(memory_bytes: float) -> str:
    """Bytes as GiB: `140 GiB`, `7.8 GiB`."""
    value = memory_bytes / GIB
    return f"{value:.0f} GiB" if value >= 10 else f"{value:.1f} GiB"


def device_text(device: WorkerDevice) -> str:
    """`GPU 0: NVIDIA H200 · 140 GiB` or `AMD EPYC 7B13 · 2 cores`."""
    if device.kind == "cuda":
        label = f"GPU {device.index}" if device.index else "GPU"
        parts = [device.name or "unknown GPU"]
        if device.memory_bytes:
            parts.append(gib(float(device.memory_bytes)))
        return f"{label}: {' · '.join(parts)}"
    parts = [device.name or "CPU"]
    if device.cores:
        parts.append(plural(device.cores, "core"))
    return " · ".join(parts)


def devices_text(devices: list[WorkerDevice] | None) -> str:
    """Every device of a worker, `; `-separated; a dash when it did not say."""
    return "; ".join(device_text(d) for d in devices or []) or DASH


def datasets_text(datasets: list[str] | None) -> str:
    """The datasets a worker can load; None means it does not say (taken to load all)."""
    if datasets is None:
        return "all (not reported)"
    return ", ".join(datasets) or "none"


def run_text(run: WorkerRun) -> str:
    """`3f2a1b9c FedGen · FMNIST · round 12/30` (named as every page names it: run_name)."""
    what = [base_name(run.algorithm, run.dataset)] if run.algorithm and run.dataset else []
    text = " · ".join([*what, f"round {max(run.current_round, 0)}/{run.rounds}"])
    return f"{run.id[:8]} {text}" if run.id else text


def running_text(running: list[WorkerRun] | None) -> str:
    """What a worker runs now (`; ` between runs), or `idle`."""
    return "; ".join(run_text(r) for r in running or []) or "idle"


def _natural(text: str) -> list[Any]:
    """Sort key with numbers compared as numbers (`slot2` before `slot10`)."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def sorted_workers(workers: list[WorkerPublic]) -> list[WorkerPublic]:
    """Workers by host, then slot, numbers in names compared as numbers."""
    return sorted(workers, key=lambda w: (_natural(host_of(w)), _natural(w.name)))


def table(workers: list[WorkerPublic], now: datetime, tz: tzinfo) -> pd.DataFrame:
    """One row per live worker with the columns the Lab page shows."""
    rows = [
        {
            "host": host_of(w),
            "slot": slot_of(w.name),
            "queues": queue_words(w),
            "devices": devices_text(w.devices),
            "threads": str(w.threads) if w.threads is not None else DASH,
            "code version": short_version(w.code_version),
            "datasets": datasets_text(w.datasets),
            "running": running_text(w.running),
            "started": when(w.started_at, now, tz),
            "heartbeat": relative(w.heartbeat_at, now),
        }
        for w in sorted_workers(workers)
    ]
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def summary(body: WorkersPublic) -> str:
    """`1 worker · 2 slots on 1 host, 1/2 slots busy`: a worker is one `fedgen-lab worker`
    (`worker_of`), however many slot processes it runs."""
    hosts = {host_of(w) for w in body.workers}
    workers = {worker_of(w) for w in body.workers}
    return (
        f"{plural(len(workers), 'worker')} · {plural(body.slots, 'slot')} on "
        f"{plural(len(hosts), 'host')}, {body.busy}/{body.slots} slots busy"
    )


def code_versions(workers: list[WorkerPublic]) -> dict[str, list[str]]:
    """Full code version -> the workers (`host/slot`) running it, most workers first."""
    by: dict[str, list[str]] = defaultdict(list)
    for w in sorted_workers(workers):
        by[w.code_version or "unknown"].append(f"{host_of(w)}/{slot_of(w.name)}")
    return dict(sorted(by.items(), key=lambda kv: -len(kv[1])))


def versions_line(workers: list[WorkerPublic]) -> str | None:
    """A sentence on the code the workers run (full values); None without workers."""
    by = code_versions(workers)
    if not by:
        return None
    if len(by) == 1:
        return f"Every worker runs `{next(iter(by))}`."
    parts = [f"`{version}` on {', '.join(names)}" for version, names in by.items()]
    return (
        f"The workers run {len(by)} code versions: {'; '.join(parts)}. A run resumed under "
        "another version is not bit-for-bit one computation."
    )


def running_runs(workers: list[WorkerPublic]) -> list[tuple[WorkerPublic, WorkerRun]]:
    """(worker, run) for every run the live workers hold, in the table's order."""
    return [(w, r) for w in sorted_workers(workers) for r in w.running]


def waiting_runs(runs: list[RunPublic]) -> list[RunPublic]:
    """The runs no live worker can take now (those with a waiting_reason)."""
    return [r for r in runs if r.waiting_reason]
