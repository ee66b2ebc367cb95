"""What a run costs: CPU seconds, peak resident memory and peak GPU memory of one segment.

`ResourceMeter` is pure (no database): the worker starts one when it claims a run, samples it
after every round and on each heartbeat, and stores `reading()` on the run. What it measures:
- cpu_s: this process's CPU time (user + system, every thread: torch's intra-op pool included)
  since `start()`. A slot process runs one run at a time, so that is the run's, plus the small
  cost of the worker's own heartbeat and dispatch threads.
- peak_rss_bytes: the largest resident set size seen at a sample (/proc/self/statm), not
  ru_maxrss: that one is monotone over the process's life, so a slot's second run would inherit
  the first's peak. Memory that rises and falls between two samples is missed; the samples
  come after each round, when the round's tensors are still alive.
- gpu_peak_bytes: torch.cuda.max_memory_allocated after reset_peak_memory_stats at start (the
  tensors' bytes, not the allocator's cache or the CUDA context); None on CPU.
"""

from __future__ import annotations

import gc
import os
import resource
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any

from fedgen.events import RoundEvent, RunInfo, RunSummary, Sink

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def current_rss() -> int | None:
    """This process's resident set size in bytes now; None where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        pass
    # Not Linux: the peak so far is the best there is (KiB on Linux, bytes on macOS).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


@dataclass(frozen=True)
class Cost:
    """One segment's reading; `merged` folds in what earlier segments of the run recorded."""

    cpu_s: float
    peak_rss_bytes: int | None
    gpu_peak_bytes: int | None

    @classmethod
    def from_columns(cls, stored: dict[str, Any]) -> Cost | None:
        """What a run's row stored (its earlier segments); None when nothing was."""
        if all(stored.get(k) is None for k in ("cpu_s", "peak_rss_bytes", "gpu_peak_bytes")):
            return None
        return cls(
            cpu_s=float(stored.get("cpu_s") or 0.0),
            peak_rss_bytes=stored.get("peak_rss_bytes"),
            gpu_peak_bytes=stored.get("gpu_peak_bytes"),
        )

    def merged(self, before: Cost | None) -> Cost:
        """CPU seconds add up over segments; peaks take the larger."""
        if before is None:
            return self
        return Cost(
            cpu_s=self.cpu_s + before.cpu_s,
            peak_rss_bytes=_max(self.peak_rss_bytes, before.peak_rss_bytes),
            gpu_peak_bytes=_max(self.gpu_peak_bytes, before.gpu_peak_bytes),
        )

    def as_columns(self) -> dict[str, Any]:
        """The run row's columns of this reading."""
        return {
            "cpu_s": round(self.cpu_s, 3),
            "peak_rss_bytes": self.peak_rss_bytes,
            "gpu_peak_bytes": self.gpu_peak_bytes,
        }


def _max(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


def cuda_in_use(device: str) -> bool:
    """The spec asks for CUDA and this process has it (torch imported only then)."""
    if not device.startswith("cuda"):
        return False
    import torch

    return bool(torch.cuda.is_available())


class ResourceMeter:
    """Measures one segment of a run (see the module docstring); thread-safe, since the
    runner's thread and the heartbeat's both sample it."""

    def __init__(self, device: str = "cpu") -> None:
        self.cuda = cuda_in_use(device)
        # The spec's "cuda:N" (None: "cuda", the current device), as the runner places tensors.
        self.index = int(device.split(":", 1)[1]) if self.cuda and ":" in device else None
        self._lock = threading.Lock()
        self._cpu0 = time.process_time()
        self._peak_rss: int | None = None
        self.free_at_start: int | None = None  # the GPU's free bytes when the segment began
        self.total_bytes: int | None = None

    def start(self) -> ResourceMeter:
        """Begin the segment: CPU time from now, GPU peak reset, the GPU's free memory noted."""
        self._cpu0 = time.process_time()
        self._peak_rss = current_rss()
        if self.cuda:
            import torch

            torch.cuda.reset_peak_memory_stats(self.index)
            self.free_at_start, self.total_bytes = gpu_memory(self.index)
        return self

    def sample(self) -> None:
        """Take an RSS sample (after each round, on each heartbeat)."""
        rss = current_rss()
        with self._lock:
            self._peak_rss = _max(self._peak_rss, rss)

    def reading(self) -> Cost:
        """CPU seconds since start and the peaks so far (a sample is taken first)."""
        self.sample()
        gpu: int | None = None
        if self.cuda:
            import torch

            gpu = int(torch.cuda.max_memory_allocated(self.index))
        with self._lock:
            return Cost(time.process_time() - self._cpu0, self._peak_rss, gpu)


def gpu_memory(index: int | None = None) -> tuple[int | None, int | None]:
    """(free, total) bytes of a CUDA device as a new run in this process would find it: the
    driver's free memory plus what this process's allocator holds in its cache (it is reused).
    (None, None) without CUDA."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None, None
        dev = torch.cuda.current_device() if index is None else index
        free, total = torch.cuda.mem_get_info(dev)
        cached = torch.cuda.memory_reserved(dev) - torch.cuda.memory_allocated(dev)
        return int(free) + max(0, int(cached)), int(total)
    except Exception:  # noqa: BLE001 - a broken driver: the figure is unknown, not fatal
        return None, None


def is_cuda_oom(exc: BaseException) -> bool:
    """torch.cuda.OutOfMemoryError, or a RuntimeError saying "CUDA out of memory" (older torch,
    or an error re-raised from an extension)."""
    torch = sys.modules.get("torch")
    oom_type = getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None)
    if oom_type is not None and isinstance(exc, oom_type):
        return True
    return isinstance(exc, RuntimeError) and "CUDA out of memory" in str(exc)


def format_bytes(n: int | None) -> str:
    """1536 -> '1.5 KiB', 1 << 30 -> '1 GiB', None -> '?' (unknown): binary units up to TiB,
    at most one decimal, a trailing '.0' dropped. The one byte formatter of the lab (quota and
    checkpoint messages, memory peaks, out-of-memory errors, the dashboard)."""
    if n is None:
        return "?"
    value, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    text = f"{value:.1f}".removesuffix(".0")
    return f"{text} {unit}"


class MeteredSink:
    """A sink that samples `meter` after each round it passes on to `inner` (the round's
    tensors are still alive then, so the sample sees the round's working set)."""

    def __init__(self, inner: Sink, meter: ResourceMeter) -> None:
        self.inner, self.meter = inner, meter

    def on_start(self, info: RunInfo) -> None:
        self.inner.on_start(info)
        self.meter.sample()

    def on_round(self, event: RoundEvent) -> None:
        self.meter.sample()
        self.inner.on_round(event)

    def on_finish(self, summary: RunSummary) -> None:
        self.meter.sample()
        self.inner.on_finish(summary)


def release_cuda(exc: BaseException) -> None:
    """After a CUDA out-of-memory: drop the failed run's tensors (the traceback's frames hold
    them) and the allocator's cache, so this process's GPU memory is free again for the next
    run and its advertised free memory says so."""
    if exc.__traceback__ is not None:
        traceback.clear_frames(exc.__traceback__)
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
