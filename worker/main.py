"""The worker's own start: `python -m worker [flags]`, which `fedgen-lab worker [flags]` (admin/)
runs in its own process with the same flags, output and exit codes.

It prints (to stderr) what it connects to and the datasets it offers, then runs one Celery
worker process, or with more than one slot (worker/slots.py) supervises that many single-slot
`python -m worker --slots 1 ...` processes (worker/supervisor.py). A worker refuses the embedded
SQLite lab unless given --embedded: on a host without FEDGEN_DATABASE_URL it would otherwise
make its own lab under FEDGEN_HOME and wait there forever.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys

from fedgen import plugins
from lab.config import Settings, get_settings
from lab.connections import embedded_parts, hide_password, print_connections

PROG = "fedgen-lab worker"
HELP = "start Celery workers: N slots, each a solo-pool process running one run at a time"
EMBEDDED_FLAG_HELP = (
    "use the embedded SQLite lab (FEDGEN_HOME/lab.db, broker.db) on purpose: a worker there sees "
    "only runs submitted to this host's `fedgen-lab api`/`up`"
)


def refuse_embedded(s: Settings) -> str | None:
    """Why a worker must not start on these settings without --embedded; None when it may."""
    why = []
    for part in embedded_parts(s):
        var, url = f"FEDGEN_{part.upper()}_URL", getattr(s, f"{part}_url")
        if not os.environ.get(var):
            why.append(f"{var} is not set (the default: {url})")
        elif part == "database":
            why.append(
                f"{var} is set to SQLite ({hide_password(url)}): set explicitly or not, "
                "an SQLite file is this host's alone"
            )
        else:
            why.append(f"{var} is the SQLite broker ({hide_password(url)})")
    if not why:
        return None
    return (
        "error: refusing to start a worker on the embedded SQLite lab: "
        + "; ".join(why)
        + ".\nSuch a worker sees only the runs of this host's own SQLite files and would wait "
        "there forever for runs submitted to the lab's server.\nSet FEDGEN_DATABASE_URL (e.g. "
        "postgresql://user:pass@host/db) and FEDGEN_BROKER_URL (e.g. redis://host:6379/0) to "
        "the lab's, or pass --embedded to use the SQLite files on purpose (as `fedgen-lab up` "
        "and `make demo` do)."
    )


def add_worker_arguments(w: argparse.ArgumentParser) -> None:
    """The worker's flags: its slots, threads, GPUs and Celery options (`python -m worker` and
    `fedgen-lab worker` take the same)."""
    w.add_argument(
        "--queues",
        default=None,
        help="comma list; default gpu when GPUs are given (--devices, CUDA_VISIBLE_DEVICES), "
        "else cpu",
    )
    w.add_argument(
        "--slots",
        type=int,
        default=None,
        help="runs at once on this machine, one process each (default: one per core on CPU, "
        "one per GPU with GPUs; 1 = a single worker process)",
    )
    w.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads per slot (default: cores // slots, at least 1)",
    )
    w.add_argument(
        "--devices",
        default=None,
        help="GPUs to use, e.g. 0,1 (each slot gets one through CUDA_VISIBLE_DEVICES; "
        "default: CUDA_VISIBLE_DEVICES if set)",
    )
    w.add_argument(
        "--slots-per-device",
        type=int,
        default=None,
        help="runs packed on each GPU (default 1)",
    )
    w.add_argument("--name", default=None)
    w.add_argument("--pool", choices=["solo", "threads"], default="solo")
    w.add_argument("--concurrency", type=int, default=1)
    w.add_argument("--loglevel", default="INFO")
    w.add_argument(
        "--quiet",
        action="store_true",
        help="no Celery start-up banner and no superuser warning (the worker of `fedgen-lab up`)",
    )
    w.add_argument("--embedded", action="store_true", help=EMBEDDED_FLAG_HELP)
    w.add_argument("--slot-child", action="store_true", help=argparse.SUPPRESS)
    w.set_defaults(fn=run_worker)


def run_worker(args: argparse.Namespace) -> int:
    """Start the worker the parsed flags describe; the exit code."""
    from worker.slots import SlotError, parse_devices, plan_slots, usable_cores, visible_devices

    try:
        devices = parse_devices(args.devices) if args.devices else visible_devices()
        plan = plan_slots(
            cores=usable_cores(),
            slots=args.slots,
            devices=devices,
            per_device=args.slots_per_device,
            threads=args.threads,
        )
    except SlotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    s = get_settings()
    if not args.slot_child:  # a slot of `worker --slots N`: its supervisor printed and checked
        print_connections("worker", s)
        from fedgen.data.common import default_root
        from fedgen.data.files import DEBIAN_FASHION_MNIST
        from vocab.host_datasets import loadable

        root = default_root()
        found = ", ".join(loadable(root))
        where = f"files under {root} or {DEBIAN_FASHION_MNIST.parent}"
        print(f"  datasets:    {found} ({where}; offered to the dispatcher)", file=sys.stderr)
        refusal = None if args.embedded else refuse_embedded(s)
        if refusal:
            print(refusal, file=sys.stderr)
            return 2
    # `gpu` when this worker is given GPUs (--devices, CUDA_VISIBLE_DEVICES), else `cpu`.
    base_queues = args.queues or ("gpu" if devices else "cpu")
    if len(plan) == 1:
        # One slot: this process is the worker (today's single process), with the slot's share.
        os.environ.update(plan[0].env())
        return _run_celery_worker(args, base_queues)
    from worker.slots import slot_commands
    from worker.supervisor import supervise

    first = base_queues.split(",")[0].strip()
    name = args.name or f"{first}-{os.getpid()}@%h"
    specs = slot_commands(
        plan,
        queues=base_queues,
        name=name,
        pool=args.pool,
        concurrency=args.concurrency,
        loglevel=args.loglevel,
        quiet=args.quiet,
    )
    # The slots inherit the decision made here (and print nothing of their own).
    extra = ["--slot-child", *(["--embedded"] if args.embedded else [])]
    specs = [(slot, [*argv, *extra], env) for slot, argv, env in specs]
    gpus = sorted({s.device for s in plan if s.device is not None})
    where = f"GPU(s) {','.join(gpus)}" if gpus else f"{usable_cores()} core(s)"
    banner = f"{len(plan)} slots on {where}, {plan[0].threads} torch thread(s) each"
    return supervise(specs, label="worker", die_with_parent=True, banner=banner)


def _run_celery_worker(args: argparse.Namespace, base_queues: str) -> int:
    from lab.queue import Sender, prefixed, worker_queue
    from worker.capabilities import Advertised, install
    from worker.celery_app import celery_app, worker_sessionmaker
    from worker.reaper import start_dispatcher
    from worker.webhook_sender import start_webhook_sender

    # Installed plugins (fedgen.plugins): which loaded, and each that failed, on stderr.
    plugins.announce(loaded_too=True)
    s = get_settings()
    s.ensure_dirs()
    queues = prefixed(base_queues, s.queue_prefix)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").replace(",", "-")
    name = args.name or f"{queues.split(',')[0]}{visible}-{os.getpid()}@%h"
    # The workers row carries the node name Celery records on the runs (%h: the host name).
    node = name.replace("%h", socket.gethostname())
    slots = args.concurrency if args.pool == "threads" else 1
    advertised = install(Advertised(slots))
    start_dispatcher(
        worker_sessionmaker(),
        Sender(s),
        s,
        name=node,
        queues=queues.split(","),
        slots=slots,
        advertised=advertised,
    )
    # Alerts go out from their own thread: a slow receiver never holds a run or a dispatch.
    start_webhook_sender(worker_sessionmaker(), s)
    # solo/threads: no fork after CUDA init; one run at a time per GPU.
    argv = [
        "worker",
        "-P",
        args.pool,
        "-c",
        str(args.concurrency),
        "-Q",
        # Its own queue, where the dispatcher sends the runs it picked this worker for; and the
        # shared cpu/gpu queue, for a task sent there directly (an older API, a manual send):
        # a worker that cannot load such a run's dataset hands the run back.
        ",".join([worker_queue(node, s.queue_prefix), queues]),
        "-n",
        name,
        "--loglevel",
        args.loglevel,
        "--without-gossip",
        "--without-mingle",
    ]
    if args.quiet:
        import warnings

        from celery.exceptions import SecurityWarning

        # `celery --quiet worker`: the banner goes. Celery warns on every start as root (even
        # with json only, where C_FORCE_ROOT changes nothing); in a root container (make demo)
        # that is noise, so the quiet worker leaves it out.
        argv.insert(0, "--quiet")
        warnings.filterwarnings("ignore", category=SecurityWarning)
    celery_app.worker_main(argv)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The parser of `python -m worker` (its messages name `fedgen-lab worker`, as its door)."""
    p = argparse.ArgumentParser(prog=PROG)
    add_worker_arguments(p)
    return p


def main(argv: list[str] | None = None) -> int:
    """`python -m worker [flags]`: the flags of `fedgen-lab worker`; the exit code."""
    return run_worker(build_parser().parse_args(argv))
