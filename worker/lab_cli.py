"""`fedgen-lab`: api, worker, up, db upgrade, users create, requeue."""

from __future__ import annotations

import argparse
import os
import socket
import sys

from api.config import get_settings


def _cmd_api(args: argparse.Namespace) -> int:
    import uvicorn

    uvicorn.run(
        "api.main:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
    )
    return 0


def _cmd_worker(args: argparse.Namespace) -> int:
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
    gpus = sorted({s.device for s in plan if s.device is not None})
    where = f"GPU(s) {','.join(gpus)}" if gpus else f"{usable_cores()} core(s)"
    banner = f"{len(plan)} slots on {where}, {plan[0].threads} torch thread(s) each"
    return supervise(specs, label="worker", die_with_parent=True, banner=banner)


def _run_celery_worker(args: argparse.Namespace, base_queues: str) -> int:
    from api.queue import Sender, prefixed
    from worker.celery_app import celery_app, worker_sessionmaker
    from worker.reaper import start_dispatcher

    s = get_settings()
    s.ensure_dirs()
    queues = prefixed(base_queues, s.queue_prefix)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").replace(",", "-")
    name = args.name or f"{queues.split(',')[0]}{visible}-{os.getpid()}@%h"
    # The workers row carries the node name Celery records on the runs (%h: the host name).
    node = name.replace("%h", socket.gethostname())
    slots = args.concurrency if args.pool == "threads" else 1
    start_dispatcher(
        worker_sessionmaker(), Sender(s), s, name=node, queues=queues.split(","), slots=slots
    )
    # solo/threads: no fork after CUDA init; one run at a time per GPU.
    argv = [
        "worker",
        "-P",
        args.pool,
        "-c",
        str(args.concurrency),
        "-Q",
        queues,
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


def _cmd_up(args: argparse.Namespace) -> int:
    from api.migrate import upgrade
    from worker.supervisor import run_up

    s = get_settings()
    s.ensure_dirs()
    upgrade(s.database_url)
    return run_up(args.host, args.port, args.dashboard_port, not args.no_dashboard)


def _cmd_db_upgrade(_args: argparse.Namespace) -> int:
    from api.migrate import upgrade

    s = get_settings()
    s.ensure_dirs()
    upgrade(s.database_url)
    print(f"database at head: {s.database_url.split('@')[-1]}")
    return 0


def _session_factory():  # type: ignore[no-untyped-def]
    from api.db import make_engine, make_sessionmaker
    from api.migrate import upgrade

    s = get_settings()
    s.ensure_dirs()
    if s.auto_upgrade:
        upgrade(s.database_url)
    return make_sessionmaker(make_engine(s.database_url))


def _cmd_users_create(args: argparse.Namespace) -> int:
    from api.db import session_scope
    from api.repository import users as users_repo

    with session_scope(_session_factory()) as session:
        user, token = users_repo.create_user(session, args.name, args.admin)
        role = "admin" if user.is_admin else "user"
    print(f"created {role} {args.name!r}; the token is shown once, only its hash is stored:")
    print(token)
    return 0


def _cmd_requeue(_args: argparse.Namespace) -> int:
    from sqlalchemy import select

    from api.models import Run
    from api.queue import Sender

    send = Sender(get_settings()).send
    with _session_factory()() as session:
        rows = session.execute(select(Run.id, Run.spec).where(Run.status == "queued")).all()
    for rid, spec in rows:
        send(str(rid), str(spec.get("device", "cpu")))
    print(f"re-sent {len(rows)} queued run(s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of `fedgen-lab`."""
    serve = argparse.ArgumentParser(add_help=False)  # where the API listens: api and up
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    p = argparse.ArgumentParser(
        prog="fedgen-lab", description="FedGen Lab server: API, workers, database."
    )
    sub = p.add_subparsers(dest="command", required=True)
    api = sub.add_parser("api", parents=[serve], help="serve the REST API")
    api.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    api.set_defaults(fn=_cmd_api)
    w = sub.add_parser(
        "worker",
        help="start Celery workers: N slots, each a solo-pool process running one run at a time",
    )
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
    w.set_defaults(fn=_cmd_worker)
    up = sub.add_parser(
        "up",
        parents=[serve],
        help="API + worker (+ dashboard) together; a dead worker or dashboard is restarted; "
        "Ctrl-C stops all",
    )
    up.add_argument("--dashboard-port", type=int, default=8501)
    up.add_argument("--no-dashboard", action="store_true")
    up.set_defaults(fn=_cmd_up)
    db = sub.add_parser("db", help="database commands").add_subparsers(
        dest="db_command", required=True
    )
    db.add_parser("upgrade", help="alembic upgrade head").set_defaults(fn=_cmd_db_upgrade)
    users = sub.add_parser("users", help="user commands").add_subparsers(
        dest="users_command", required=True
    )
    uc = users.add_parser("create", help="create a user; prints the token as the last line")
    uc.add_argument("name")
    uc.add_argument("--admin", action="store_true")
    uc.set_defaults(fn=_cmd_users_create)
    sub.add_parser("requeue", help="send the tasks of all queued runs again").set_defaults(
        fn=_cmd_requeue
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `fedgen-lab` console script."""
    args = build_parser().parse_args(argv)
    return int(args.fn(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
