"""How a run reaches a worker: the task name, the queue names and the sender.

Both sides agree through this module: the API (and `fedgen-lab requeue`, and the
worker's reaper) send with `Sender`; the worker consumes TASK_NAME from the
queues named by `queue_for_device`/`prefixed` with the same `broker_options`.
The sender is a bare Celery producer built on first use, so importing the API
loads neither Celery nor the worker's app and its tasks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lab.config import Settings

if TYPE_CHECKING:
    from celery import Celery

TASK_NAME = "fedgen.run_simulation"
# (run_id, full queue name) -> None: sends one run's task. create_app takes another in tests.
Enqueue = Callable[[str, str], None]


def queue_for_device(device: str, prefix: str) -> str:
    """The queue of a run: FEDGEN_QUEUE_PREFIX + 'gpu' for cuda devices, + 'cpu' otherwise."""
    return prefix + ("gpu" if device.startswith("cuda") else "cpu")


def worker_queue(name: str, prefix: str) -> str:
    """A worker process's own queue: the dispatcher sends each run to the one worker it chose
    (one that can load its dataset), never to a queue any worker may take from."""
    return f"{prefix}worker.{name}"


def prefixed(queues: str, prefix: str) -> str:
    """A comma list of base queue names ('cpu,gpu') with the prefix in front of each."""
    return ",".join(prefix + q.strip() for q in queues.split(",") if q.strip())


def broker_options(s: Settings) -> dict[str, Any]:
    """Celery settings of the broker connection, the same for sender and worker."""
    sqla = s.broker_url.startswith("sqla+")
    if s.broker_url.startswith("sqla+sqlite"):
        s.home.mkdir(parents=True, exist_ok=True)
    # kombu's SQLAlchemy transport hands its options to create_engine: no visibility timeout there
    # (it has none; unacked messages stay invisible until a worker restarts).
    transport = {} if sqla else {"visibility_timeout": s.visibility_timeout_s}
    return {
        "broker_url": s.broker_url,
        "broker_transport_options": transport,
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_default_queue": queue_for_device("cpu", s.queue_prefix),
    }


class Sender:
    """Sends run tasks to the broker of `settings`; the Celery producer is built on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._app: Celery | None = None
        self._lock = threading.Lock()

    def _celery(self) -> Celery:
        with self._lock:
            if self._app is None:
                from celery import Celery  # late: only a process that sends pays for Celery

                app = Celery("fedgen-sender", set_as_current=False)
                app.conf.update(broker_options(self.settings))
                self._app = app
            return self._app

    def send(self, run_id: str, queue: str) -> None:
        """Send the run's task to `queue` (a worker's own queue; after the row is committed)."""
        self._celery().send_task(TASK_NAME, args=[run_id], queue=queue)

    def waiting(self, queue: str) -> int:
        """How many messages wait in `queue` (the full name, prefix included) on the broker.

        The dispatcher re-sends an unclaimed run only when fewer messages wait than runs it sent
        there, so a message still in the queue is never doubled.
        """
        with self._celery().connection_for_read() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
            # celery-types' kombu stubs type default_channel as the abstract StdChannel, which
            # has no queue_declare; every transport's channel (Redis, memory, AMQP) has it.
            declared = conn.default_channel.queue_declare(queue=queue)  # type: ignore[attr-defined]
            return int(declared.message_count)

    def check(self) -> None:
        """Raise unless the broker accepts a connection (the /ready probe)."""
        with self._celery().connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
