"""Torch's CPU thread counts for one run: `fedgen run --threads` and a lab worker's slot.

Oversubscription is the reason: on a 2-core machine a 20-step update of the paper's CNN
takes about as long with 1 thread as with 2, and two processes with torch's default
threads each made a round 15x slower, so a process that shares the machine sets its
share here before any tensor work.
"""

from __future__ import annotations


def set_threads(n: int) -> None:
    """Use `n` intra-op threads and `n` inter-op threads (the latter only if still settable)."""
    import torch  # late: `fedgen validate` and the API never load torch

    if n < 1:
        raise ValueError(f"threads must be >= 1, got {n}")
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(n)
    except RuntimeError:
        # Settable once per process, before any inter-op work: a long-lived worker's later runs
        # keep the first run's value (it is the same slot's share).
        pass


def current_threads() -> int | None:
    """Torch's intra-op thread count, or None when this process has not loaded torch."""
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return None
    return int(torch.get_num_threads())
