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

from api.schemas.runs import RunPublic
from dashboard.times import DASH, parse_ts, relative, when

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


def host_of(worker: dict[str, Any]) -> str:
    """The worker's host, else the host part of its node name."""
    return str(worker.get("host") or str(worker.get("name") or "").partition("@")[2] or DASH)


def gib(memory_bytes: float) -> str:
    """Bytes as GiB: `140 GiB`, `7.8 GiB`."""
    value = memory_bytes / GIB
    return f"{value:.0f} GiB" if value >= 10 else f"{value:.1f} GiB"


def device_text(device: dict[str, Any]) -> str:
    """`GPU 0: NVIDIA H200 · 140 GiB` or `AMD EPYC 7B13 · 2 cores`."""
    if device.get("kind") == "cuda":
        index = device.get("index")
        label = f"GPU {index}" if index not in (None, "") else "GPU"
        parts = [str(device.get("name") or "unknown GPU")]
        if device.get("memory_bytes"):
            parts.append(gib(float(device["memory_bytes"])))
        return f"{label}: {' · '.join(parts)}"
    parts = [str(device.get("name") or "CPU")]
    cores = device.get("cores")
    if cores:
        parts.append(plural(int(cores), "core"))
    return " · ".join(parts)


def devices_text(devices: list[dict[str, Any]] | None) -> str:
    """Every device of a worker, `; `-separated; a dash when it did not say."""
    return "; ".join(device_text(d) for d in devices or []) or DASH


def datasets_text(datasets: list[str] | None) -> str:
    """The datasets a worker can load; None means it does not say (taken to load all)."""
    if datasets is None:
        return "all (not reported)"
    return ", ".join(datasets) or "none"


def run_text(run: dict[str, Any]) -> str:
    """`3f2a1b9c FedGen · fashion-mnist · round 12/30`."""
    rid = str(run.get("id") or "")[:8]
    current, rounds = int(run.get("current_round") or 0), int(run.get("rounds") or 0)
    what = [str(run[k]) for k in ("algorithm", "dataset") if run.get(k)]
    text = " · ".join([*what, f"round {max(current, 0)}/{rounds}"])
    return f"{rid} {text}" if rid else text


def running_text(running: list[dict[str, Any]] | None) -> str:
    """What a worker runs now (`; ` between runs), or `idle`."""
    return "; ".join(run_text(r) for r in running or []) or "idle"


def _natural(text: str) -> list[Any]:
    """Sort key with numbers compared as numbers (`slot2` before `slot10`)."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def sorted_workers(workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Workers by host, then slot, numbers in names compared as numbers."""
    return sorted(workers, key=lambda w: (_natural(host_of(w)), _natural(str(w.get("name")))))


def table(workers: list[dict[str, Any]], now: datetime, tz: tzinfo) -> pd.DataFrame:
    """One row per live worker with the columns the Lab page shows."""
    rows = []
    for w in sorted_workers(workers):
        heartbeat = parse_ts(w.get("heartbeat_at"))
        threads = w.get("threads")
        rows.append(
            {
                "host": host_of(w),
                "slot": slot_of(str(w.get("name") or "")),
                "queues": ", ".join(w.get("queues") or []) or DASH,
                "devices": devices_text(w.get("devices")),
                "threads": str(threads) if threads is not None else DASH,
                "code version": short_version(w.get("code_version")),
                "datasets": datasets_text(w.get("datasets")),
                "running": running_text(w.get("running")),
                "started": when(w.get("started_at"), now, tz),
                "heartbeat": relative(heartbeat, now) if heartbeat else DASH,
            }
        )
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def summary(body: dict[str, Any]) -> str:
    """`3 workers on 2 hosts, 1/3 slots busy`."""
    workers = body.get("workers") or []
    hosts = {host_of(w) for w in workers}
    slots = int(body.get("slots") or 0)
    busy = int(body.get("busy") or 0)
    return (
        f"{plural(len(workers), 'worker')} on {plural(len(hosts), 'host')}, "
        f"{busy}/{slots} slots busy"
    )


def code_versions(workers: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Full code version -> the workers (`host/slot`) running it, most workers first."""
    by: dict[str, list[str]] = defaultdict(list)
    for w in sorted_workers(workers):
        by[str(w.get("code_version") or "unknown")].append(
            f"{host_of(w)}/{slot_of(str(w.get('name') or ''))}"
        )
    return dict(sorted(by.items(), key=lambda kv: -len(kv[1])))


def versions_line(workers: list[dict[str, Any]]) -> str | None:
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


def running_runs(workers: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(worker, run) for every run the live workers hold, in the table's order."""
    return [(w, r) for w in sorted_workers(workers) for r in w.get("running") or []]


def waiting_runs(runs: list[RunPublic]) -> list[RunPublic]:
    """The runs no live worker can take now (those with a waiting_reason)."""
    return [r for r in runs if r.waiting_reason]
