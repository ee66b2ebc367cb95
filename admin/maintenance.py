"""`fedgen-lab db upgrade`, `requeue` and `checkpoints import`: an admin's one-shot commands on
the lab's database (the migrations, the queued runs' sends, the checkpoint files of old)."""

from __future__ import annotations

import argparse
import os
import sys

from admin.sessions import session_factory
from lab.config import get_settings
from lab.connections import hide_password, print_connections


def _cmd_db_upgrade(_args: argparse.Namespace) -> int:
    from migrations.apply import upgrade

    s = get_settings()
    print_connections("db upgrade", s)
    s.ensure_dirs()
    upgrade(s.database_url)
    print(f"database at head: {hide_password(s.database_url)}")
    return 0


def _cmd_requeue(_args: argparse.Namespace) -> int:
    from lab.dispatch import dispatch_pass
    from lab.queue import Sender
    from lab.repository import dispatch_state

    factory = session_factory("requeue")
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

    factory = session_factory("checkpoints import")
    root = get_settings().checkpoint_root
    done, total, problems = import_files(factory, CheckpointStore(root))
    print(
        f"imported {done} checkpoint{'s' * (done != 1)} ({_size(total)}) from {root}; "
        f"{len(problems)} problem{'s' * (len(problems) != 1)}"
    )
    for problem in problems:
        print(f"  {problem}")
    return 1 if problems else 0


def add_db_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fedgen-lab db upgrade`."""
    db = sub.add_parser("db", help="database commands").add_subparsers(
        dest="db_command", required=True
    )
    db.add_parser("upgrade", help="alembic upgrade head").set_defaults(fn=_cmd_db_upgrade)


def add_requeue_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fedgen-lab requeue`."""
    sub.add_parser("requeue", help="send the tasks of all queued runs again").set_defaults(
        fn=_cmd_requeue
    )


def add_checkpoints_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fedgen-lab checkpoints import`."""
    ck = sub.add_parser("checkpoints", help="checkpoint commands").add_subparsers(
        dest="checkpoints_command", required=True
    )
    ck.add_parser(
        "import",
        help="move checkpoint files written before checkpoints moved into the database into it "
        "(sha256 checked; a file is removed once imported)",
    ).set_defaults(fn=_cmd_checkpoints_import)
