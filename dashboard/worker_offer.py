"""Which datasets the live workers of a run's queue can load (GET /workers), as the
dispatcher (lab/dispatch.py) decides it: the Submit form offers those and says why a run
would wait.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vocab.schemas.workers import WorkersPublic

NO_WORKER_HAS = "no live worker has it"


def queue_kind(device: str) -> str:
    """'gpu' for a cuda device, else 'cpu': the queue a run goes to (lab.queue.queue_for_device,
    less the lab's queue prefix, which a worker's queue names end with)."""
    return "gpu" if str(device).startswith("cuda") else "cpu"


@dataclass(frozen=True)
class Offer:
    """What the live workers of a run's queue can load, from GET /workers.

    `datasets` None: some worker of the queue does not say (taken to load all, as the
    dispatcher does). `any_worker`: the spec names its own data.root or data.download, so
    any worker of the queue may take it (lab.fairshare.LiveWorker.can_run).
    """

    queue: str
    live: int  # live workers, any queue
    serving: int  # live workers of this queue
    datasets: frozenset[str] | None
    any_worker: bool = False

    def reason(self, dataset: str) -> str | None:
        """'mnist — no live worker has it', or None when some live worker can load it (or
        nothing is known: no live worker of the queue, then the run waits for one)."""
        if self.any_worker or self.serving == 0 or self.datasets is None:
            return None
        return None if dataset in self.datasets else f"{dataset} — {NO_WORKER_HAS}"

    def label(self, dataset: Any) -> str:
        """A picker's option label: the name, and why it cannot run now."""
        return self.reason(str(dataset)) or str(dataset)

    def notice(self) -> str | None:
        """What a researcher should know before submitting (the run would wait), or None."""
        if self.live == 0:
            return (
                "No worker is live: a run submitted now waits in the queue until a worker "
                "starts (`fedgen-lab worker`); which datasets it can load is not known yet."
            )
        if self.serving == 0:
            return (
                f"No live worker serves the {self.queue} queue: a run submitted now waits "
                f"until one starts (the {self.live} live worker(s) serve other queues)."
            )
        return None


def offer(workers: WorkersPublic, device: str, *, any_worker: bool = False) -> Offer:
    """The `Offer` of GET /workers' answer for a run on `device`."""
    kind = queue_kind(device)
    live = workers.workers
    serving = [w for w in live if any(q.endswith(kind) for q in w.queues)]
    says = [w.datasets for w in serving]
    datasets = None if None in says else frozenset(d for ds in says for d in ds or ())
    return Offer(kind, len(live), len(serving), datasets, any_worker)
