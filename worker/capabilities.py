"""What this worker process can run, as it registers it in the `workers` table.

Host, slots, torch threads, devices (CPU model and cores, or each GPU's name, memory and free
memory now), the code version (fedgen.versions.code_version, the value every run records) and
the datasets whose files it finds (vocab.host_datasets). The datasets and the GPUs' free memory
are looked for again at every renewal, so files copied onto a running host are offered from the
next dispatch pass; a dataset that failed to load here is no longer offered by this process
(until it restarts), whatever the files look like: the dispatcher then sends its runs to other
workers.
"""

from __future__ import annotations

import os
import socket
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from fedgen.data.common import default_root
from fedgen.resources import gpu_memory
from fedgen.versions import code_version
from vocab.host_datasets import loadable
from worker.slots import THREADS_ENV, usable_cores, visible_devices


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


@lru_cache(maxsize=1)
def devices() -> list[dict[str, Any]]:
    """The devices this process computes on: its GPUs (CUDA_VISIBLE_DEVICES) or the CPU."""
    gpus = visible_devices()
    if gpus is None:
        return [{"kind": "cpu", "name": _cpu_model(), "cores": usable_cores()}]
    import torch  # only a GPU worker pays for torch here; it loads it for its first run anyway

    out: list[dict[str, Any]] = []
    for i, physical in enumerate(gpus):
        entry: dict[str, Any] = {"kind": "cuda", "index": physical, "name": None}
        if torch.cuda.is_available() and i < torch.cuda.device_count():
            props = torch.cuda.get_device_properties(i)
            entry.update(name=props.name, memory_bytes=int(props.total_memory))
        out.append(entry)
    return out


def with_free_memory(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`found` with each GPU's free memory now (free_bytes: what a new run in this process would
    have, fedgen.resources.gpu_memory), read again at each renewal: after a CUDA out-of-memory
    the dispatcher sends the run only to a GPU with more free memory than it had."""
    out = []
    for i, entry in enumerate(found):
        if entry.get("kind") == "cuda" and entry.get("memory_bytes") is not None:
            entry = {**entry, "free_bytes": gpu_memory(i)[0]}
        out.append(entry)
    return out


class Advertised:
    """This process's capabilities; thread-safe (the task thread drops, the dispatcher reads)."""

    def __init__(self, slots: int, root: Path | None = None) -> None:
        self.slots = slots
        self.root = root
        self._failed: set[str] = set()
        self._lock = threading.Lock()

    def drop(self, dataset: str) -> None:
        """Stop offering `dataset`: loading it failed in this process."""
        with self._lock:
            self._failed.add(dataset)

    def datasets(self) -> list[str]:
        """The datasets found under the data root now, less those that failed to load here."""
        found = loadable(self.root or default_root())
        with self._lock:
            return [d for d in found if d not in self._failed]

    def as_json(self) -> dict[str, Any]:
        """The `workers.capabilities` value."""
        threads = os.environ.get(THREADS_ENV)
        return {
            "slots": self.slots,
            "threads": int(threads) if threads and threads.isdigit() else None,
            "devices": with_free_memory(devices()),
            "code_version": code_version(),
            "datasets": self.datasets(),
            "pid": os.getpid(),
        }


def host_name() -> str:
    """This machine's name, as it appears in worker node names (`slot0@host`)."""
    return socket.gethostname()


_current: Advertised | None = None


def install(advertised: Advertised) -> Advertised:
    """Make `advertised` this process's capabilities (the dispatcher loop registers them)."""
    global _current
    _current = advertised
    return advertised


def current() -> Advertised | None:
    """This process's capabilities, when it is a lab worker (None in tests and the CLI)."""
    return _current
