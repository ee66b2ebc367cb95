"""`fedgen-lab`: api, worker, dashboard, up, db upgrade, users create, tokens, quota, requeue, checkpoints import.

Every command first prints (to stderr) what it connects to: the database and broker URLs,
passwords hidden, and where checkpoints live. A worker refuses the embedded SQLite lab unless
given --embedded: on a host without FEDGEN_DATABASE_URL it would otherwise make its own lab
under FEDGEN_HOME and wait there forever.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from fedgen import plugins
from lab.config import Settings, get_settings
from worker import quota_cli, tokens_cli, trash_cli

if TYPE_CHECKING:  # the commands import SQLAlchemy when they run, not at the CLI's start
    from sqlalchemy.orm import Session, sessionmaker

EMBEDDED_FLAG_HELP = (
    "use the embedded SQLite lab (FEDGEN_HOME/lab.db, broker.db) on purpose: a worker there sees "
    "only runs submitted to this host's `fedgen-lab api`/`up`"
)


def hide_password(url: str) -> str:
    """The URL with its password shown as *** (`redis://:pass@h` -> `redis://:***@h`); Celery's
    `;`-separated failover lists URL by URL."""
    if ";" in url:
        return ";".join(hide_password(u) for u in url.split(";"))
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # not an SQLAlchemy URL (amqp://, memory://): the generic rule below
        parsed = None
    if parsed is not None and parsed.password is not None:
        return parsed.render_as_string(hide_password=True)
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def embedded_parts(s: Settings) -> list[str]:
    """What makes the settings the embedded lab: an SQLite database (FEDGEN_DATABASE_URL unset,
    or set to sqlite:) and/or the SQLite broker (sqla+sqlite:); empty when neither."""
    out = []
    if s.database_url.startswith("sqlite"):
        out.append("database")
    if s.broker_url.startswith("sqla+sqlite"):
        out.append("broker")
    return out


def print_connections(command: str, s: Settings) -> None:
    """What this command connects to (stderr, so stdout stays the command's own answer)."""
    tag = dict.fromkeys(embedded_parts(s), "  (embedded SQLite)")
    lines = [
        f"fedgen-lab {command}",
        f"  database:    {hide_password(s.database_url)}{tag.get('database', '')}",
        f"  broker:      {hide_password(s.broker_url)}{tag.get('broker', '')}",
        f"  checkpoints: in the database (legacy files: {s.checkpoint_root})",
    ]
    print("\n".join(lines), file=sys.stderr, flush=True)


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


def _cmd_api(args: argparse.Namespace) -> int:
    import uvicorn

    print_connections("api", get_settings())
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
    s = get_settings()
    if not args.slot_child:  # a slot of `worker --slots N`: its supervisor printed and checked
        print_connections("worker", s)
        from fedgen.data.common import default_root
        from fedgen.data.locate import DEBIAN_FASHION_MNIST, loadable

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


def _cmd_up(args: argparse.Namespace) -> int:
    from migrations.apply import upgrade
    from worker.supervisor import run_up

    s = get_settings()
    print_connections("up", s)
    s.ensure_dirs()
    upgrade(s.database_url)
    # The lab of one host: its worker uses the same (possibly embedded SQLite) lab as its API.
    return run_up(
        args.host,
        args.port,
        args.dashboard_port,
        not args.no_dashboard,
        embedded=bool(embedded_parts(s)),
    )


def api_url_problem(url: str) -> str | None:
    """Why `--api-url` cannot be the dashboard's API, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"--api-url: expected http(s)://host[:port][/api/v1], got {url!r}"
    if parts.query or parts.fragment or parts.username or parts.password:
        return f"--api-url: no query, fragment or credentials in the URL, got {url!r}"
    return None


def _cmd_dashboard(args: argparse.Namespace) -> int:
    """Replace this process with the dashboard's Streamlit server (signals reach it directly)."""
    from worker.supervisor import DASHBOARD_APP, dashboard_command

    env = dict(os.environ)
    if args.api_url is not None:
        problem = api_url_problem(args.api_url)
        if problem:
            print(f"fedgen-lab dashboard: {problem}", file=sys.stderr)
            return 2
        env["FEDGEN_API_URL"] = args.api_url
    if not DASHBOARD_APP.exists():
        print(f"fedgen-lab dashboard: the app is missing ({DASHBOARD_APP})", file=sys.stderr)
        return 1
    api = env.get("FEDGEN_API_URL", "http://127.0.0.1:8000/api/v1 (the default)")
    token = "set: one member's dashboard" if env.get("FEDGEN_TOKEN") else "unset: members sign in"
    print(
        f"dashboard: http://{args.host}:{args.port}; API {api}; FEDGEN_TOKEN {token}",
        file=sys.stderr,
    )
    cmd = dashboard_command(sys.executable, str(DASHBOARD_APP), args.host, args.port)
    os.execve(cmd[0], cmd, env)
    return 0  # not reached


def _cmd_db_upgrade(_args: argparse.Namespace) -> int:
    from migrations.apply import upgrade

    s = get_settings()
    print_connections("db upgrade", s)
    s.ensure_dirs()
    upgrade(s.database_url)
    print(f"database at head: {hide_password(s.database_url)}")
    return 0


def _session_factory(command: str) -> sessionmaker[Session]:
    from lab.db import make_engine, make_sessionmaker
    from migrations.apply import upgrade

    s = get_settings()
    print_connections(command, s)
    s.ensure_dirs()
    if s.auto_upgrade:
        upgrade(s.database_url)
    return make_sessionmaker(make_engine(s.database_url))


def _cmd_users_create(args: argparse.Namespace) -> int:
    return tokens_cli.create_and_print(args, create_user=True)


def _cmd_requeue(_args: argparse.Namespace) -> int:
    from lab.dispatch import dispatch_pass
    from lab.queue import Sender
    from lab.repository import dispatch_state

    factory = _session_factory("requeue")
    s = get_settings()
    with factory() as session:
        queued = dispatch_state.forget_sends(session)
        session.commit()
        report = dispatch_pass(session, Sender(s).send, s, f"requeue:{os.getpid()}")
    if report.failed:
        print(f"error: the broker refused a send ({report.failed})", file=sys.stderr)
        return 1
    waiting = queued - len(report.sent)
    if waiting > 0:
        print(f"{waiting} queued run(s) wait for a free live worker that can run them")
    print(f"re-sent {len(report.sent)} queued run(s)")
    return 0


def _size(n: int) -> str:
    """1234567 -> '1.2 MB'."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _cmd_checkpoints_import(_args: argparse.Namespace) -> int:
    from lab.repository.checkpoints import import_files
    from lab.store import CheckpointStore

    factory = _session_factory("checkpoints import")
    root = get_settings().checkpoint_root
    done, total, problems = import_files(factory, CheckpointStore(root))
    print(
        f"imported {done} checkpoint{'s' * (done != 1)} ({_size(total)}) from {root}; "
        f"{len(problems)} problem{'s' * (len(problems) != 1)}"
    )
    for problem in problems:
        print(f"  {problem}")
    return 1 if problems else 0


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
    _add_worker_parser(sub)
    up = sub.add_parser(
        "up",
        parents=[serve],
        help="API + worker (+ dashboard) together; a dead worker or dashboard is restarted; "
        "Ctrl-C stops all",
    )
    up.add_argument("--dashboard-port", type=int, default=8501)
    up.add_argument("--no-dashboard", action="store_true")
    up.set_defaults(fn=_cmd_up)
    dash = sub.add_parser(
        "dashboard", help="serve the dashboard (Streamlit) for a lab whose API runs elsewhere"
    )
    dash.add_argument("--host", default="127.0.0.1", help="address to listen on")
    dash.add_argument("--port", type=int, default=8501)
    dash.add_argument(
        "--api-url",
        default=None,
        help="the lab's API, e.g. http://api:8000/api/v1 (default: FEDGEN_API_URL, else "
        "http://127.0.0.1:8000/api/v1); the dashboard talks to no other",
    )
    dash.set_defaults(fn=_cmd_dashboard)
    _add_admin_parsers(sub)
    return p


def _add_worker_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fedgen-lab worker`: its slots, threads, GPUs and Celery options."""
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
    w.add_argument("--embedded", action="store_true", help=EMBEDDED_FLAG_HELP)
    w.add_argument("--slot-child", action="store_true", help=argparse.SUPPRESS)
    w.set_defaults(fn=_cmd_worker)


def _add_admin_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The one-shot commands: db upgrade, users create, requeue, checkpoints import."""
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
    tokens_cli.add_token_options(uc)
    uc.set_defaults(fn=_cmd_users_create)
    tokens_cli.add_tokens_parser(sub)
    trash_cli.add_trash_parser(sub)
    quota_cli.add_quota_parser(sub)
    sub.add_parser("requeue", help="send the tasks of all queued runs again").set_defaults(
        fn=_cmd_requeue
    )
    ck = sub.add_parser("checkpoints", help="checkpoint commands").add_subparsers(
        dest="checkpoints_command", required=True
    )
    ck.add_parser(
        "import",
        help="move checkpoint files written before checkpoints moved into the database into it "
        "(sha256 checked; a file is removed once imported)",
    ).set_defaults(fn=_cmd_checkpoints_import)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `fedgen-lab` console script."""
    args = build_parser().parse_args(argv)
    return int(args.fn(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
