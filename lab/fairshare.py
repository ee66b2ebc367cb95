"""The queue order (fair share across owners, then priority) and the start-time estimate.

Pure functions over snapshots of the runs table (lab.repository.dispatch_state.queue_snapshot reads
them): `fair_order` is THE order, used by the dispatcher (which run gets the next free slot)
and by the API (`queue_position`), so the two can never disagree.

The order within one queue:
1. runs already sent and not yet claimed, then running runs whose lease expired (they are on
   their way or were started already);
2. then by priority tier: high, normal, low;
3. within a tier, round-robin across owners: an owner's k-th waiting run comes in round
   k + (runs the owner has running or on their way), so an owner with nothing running goes
   first and one user's sweep holds back a lab-mate's run by at most one run per free slot;
4. within a round, the owner served least recently first, then the older run.
"""

from __future__ import annotations

import heapq
import statistics
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from fedgen.resources import format_bytes
from vocab.run_status import Priority

_RANK: dict[Priority, int] = {Priority.HIGH: 0, Priority.NORMAL: 1, Priority.LOW: 2}
_NEVER = datetime.min.isoformat()


@dataclass(frozen=True, slots=True)
class Waiting:
    """A run that needs a worker: queued, or running with an expired lease (`resumed`)."""

    id: uuid.UUID
    queue: str
    owner_id: uuid.UUID
    priority: Priority
    created_at: datetime
    rounds: int
    current_round: int
    resumed: bool
    dispatched_at: datetime | None
    dispatch_count: int
    next_dispatch_at: datetime | None
    dataset: str = ""
    dispatched_to: str | None = None  # the worker whose own queue its last send went to
    # Reads its data from its own `data.root` or downloads it: no worker's probe can say.
    any_worker: bool = False
    # It ran out of CUDA memory (on `oom_worker`, where a run had this many bytes free): only a
    # GPU with more free memory may take it; None (free unknown): any worker but that one.
    needs_free_bytes: int | None = None
    oom_worker: str | None = None


@dataclass(frozen=True, slots=True)
class Active:
    """A running run with a live lease (what occupies a slot now)."""

    id: uuid.UUID
    queue: str
    owner_id: uuid.UUID
    started_at: datetime | None
    current_round: int
    rounds: int
    worker: str | None = None  # the holder's node name


@dataclass(frozen=True, slots=True)
class LiveWorker:
    """A live worker process: the queues it serves, its slots, the datasets it can load (files
    found under its data root; a run that downloads its data or names its own `data.root` may go
    to any worker of its queue)."""

    name: str
    queues: frozenset[str]
    slots: int
    datasets: frozenset[str] | None  # None: a worker that does not say (taken to load all)
    gpu_free_bytes: int | None = None  # the most free memory of its GPUs (None: no GPU, or unsaid)

    def can_run(self, w: Waiting) -> bool:
        """It serves the run's queue, can load its dataset, and has the GPU memory it needs."""
        return self.has_dataset(w) and self.has_memory(w)

    def has_dataset(self, w: Waiting) -> bool:
        """It serves the run's queue and can load its dataset."""
        if w.queue not in self.queues:
            return False
        return self.datasets is None or w.any_worker or w.dataset in self.datasets

    def has_memory(self, w: Waiting) -> bool:
        """After a CUDA out-of-memory: a GPU with more free memory than the run had there."""
        if w.needs_free_bytes is not None:
            return self.gpu_free_bytes is not None and self.gpu_free_bytes > w.needs_free_bytes
        return w.oom_worker is None or self.name != w.oom_worker


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the dispatcher and the queue estimate need, read at one time `now`."""

    now: datetime
    waiting: list[Waiting]
    active: list[Active]
    slots: dict[str, int]  # live workers' slots per queue
    last_start: dict[uuid.UUID, datetime]  # owner -> their most recent run start
    workers: list[LiveWorker] = field(default_factory=list)

    def queues(self) -> set[str]:
        """Every queue that has a waiting run or a live worker."""
        return {w.queue for w in self.waiting} | set(self.slots)


def fair_order(
    waiting: Iterable[Waiting],
    busy_per_owner: Mapping[uuid.UUID, int],
    last_start: Mapping[uuid.UUID, datetime],
) -> list[Waiting]:
    """The waiting runs of ONE queue in the order they get slots (see the module docstring).

    busy_per_owner: runs each owner has running with a live lease in this queue.
    last_start: each owner's most recent start (owners never served come first).
    """
    ahead: list[Waiting] = []
    rest: dict[tuple[int, uuid.UUID], list[Waiting]] = defaultdict(list)
    busy = dict(busy_per_owner)
    for w in waiting:
        if w.dispatched_at is not None or w.resumed:
            ahead.append(w)
            busy[w.owner_id] = busy.get(w.owner_id, 0) + 1
        else:
            rest[(_RANK[w.priority], w.owner_id)].append(w)
    ahead.sort(key=lambda w: (w.dispatched_at is None, w.dispatched_at or w.created_at, str(w.id)))
    keyed: list[tuple[tuple[int, int, str, datetime, str], Waiting]] = []
    for (rank, owner), runs in rest.items():
        runs.sort(key=lambda w: (w.created_at, str(w.id)))
        served = last_start[owner].isoformat() if owner in last_start else _NEVER
        for k, w in enumerate(runs, start=busy.get(owner, 0)):
            keyed.append(((rank, k, served, w.created_at, str(w.id)), w))
    keyed.sort(key=lambda kw: kw[0])
    return ahead + [w for _, w in keyed]


def orders(snap: Snapshot) -> dict[str, list[Waiting]]:
    """fair_order of every queue of the snapshot."""
    by_queue: dict[str, list[Waiting]] = defaultdict(list)
    for w in snap.waiting:
        by_queue[w.queue].append(w)
    out = {}
    for q, runs in by_queue.items():
        busy: dict[uuid.UUID, int] = defaultdict(int)
        for a in snap.active:
            if a.queue == q:
                busy[a.owner_id] += 1
        out[q] = fair_order(runs, busy, snap.last_start)
    return out


def waiting_reason(snap: Snapshot, w: Waiting) -> str | None:
    """Why no worker can take the run now, when none of the live ones ever could; None when
    one could (it then waits for a free slot: see its queue position)."""
    serving = [k for k in snap.workers if w.queue in k.queues]
    if not serving and snap.slots.get(w.queue, 0) <= 0:
        return f"no live worker serves the {w.queue} queue"
    if serving and not any(k.can_run(w) for k in serving):
        if not any(k.has_dataset(w) for k in serving):
            return f"no live worker has dataset {w.dataset}"
        return _memory_reason(w)
    return None


def _memory_reason(w: Waiting) -> str:
    """Why a run that ran out of CUDA memory waits (see Waiting.needs_free_bytes)."""
    if w.needs_free_bytes is None:
        return f"no live worker other than {w.oom_worker}, where it ran out of CUDA memory"
    need = format_bytes(w.needs_free_bytes)
    return (
        f"no live worker has a GPU with more than {need} free "
        f"(it ran out of CUDA memory on {w.oom_worker} with {need} free)"
    )


def median_round_s(snap: Snapshot, queue: str) -> float | None:
    """Median seconds per round of the queue's running runs (elapsed / rounds done); None if none."""
    times = [
        (snap.now - a.started_at).total_seconds() / (a.current_round + 1)
        for a in snap.active
        if a.queue == queue and a.started_at is not None and a.current_round >= 0
    ]
    return statistics.median(times) if times else None


def expected_starts(snap: Snapshot, queue: str, order: list[Waiting]) -> dict[uuid.UUID, datetime]:
    """When each run of `order` should start; runs left out are unknown (no estimate), as is
    every run no live worker can take (`waiting_reason`).

    Slots free up when their running run ends (median round time x its rounds left); each run
    ahead then takes the earliest free slot for (median round time x its rounds). With no live
    worker nothing is known; with no round time yet, only runs that fit in free slots are.
    """
    slots = snap.slots.get(queue, 0)
    if slots <= 0:
        return {}
    per_round = median_round_s(snap, queue)
    now = snap.now
    running = [a for a in snap.active if a.queue == queue]
    if per_round is None:
        free = max(0, slots - len(running))
        servable = [w for w in order if waiting_reason(snap, w) is None]
        return {w.id: now for w in servable[:free]}
    # When each slot frees: its running run's end, or now for an idle slot (a queue with more
    # runs holding leases than live slots, e.g. after a worker died, keeps the earliest ends).
    ends = sorted(
        now + timedelta(seconds=per_round * max(0, a.rounds - a.current_round - 1)) for a in running
    )
    heap = (ends + [now] * max(0, slots - len(ends)))[:slots]
    heapq.heapify(heap)
    out: dict[uuid.UUID, datetime] = {}
    for w in order:
        if waiting_reason(snap, w) is not None:
            continue  # no live worker can take it: it holds no slot, and its start is unknown
        start = heapq.heappop(heap)
        out[w.id] = max(start, now)
        left = w.rounds - w.current_round - 1 if w.resumed else w.rounds
        heapq.heappush(heap, out[w.id] + timedelta(seconds=per_round * max(1, left)))
    return out


def positions(snap: Snapshot) -> dict[uuid.UUID, tuple[int, datetime | None]]:
    """(queue_position from 1, expected_start or None) of every waiting run in the snapshot."""
    out: dict[uuid.UUID, tuple[int, datetime | None]] = {}
    for q, order in orders(snap).items():
        starts = expected_starts(snap, q, order)
        for i, w in enumerate(order, start=1):
            out[w.id] = (i, starts.get(w.id))
    return out
