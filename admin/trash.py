"""`fedgen-lab trash purge [--older-than-days D]`: delete for good, now, the runs and sweeps
that have been in the trash longer than D days (default FEDGEN_TRASH_DAYS), as the workers'
periodic pass does (lab.trash_actions.purge_pass), batch after batch until none is left. Each one is
recorded in the audit log (run.purge / sweep.purge, by `system`)."""

from __future__ import annotations

import argparse

from admin.sessions import session_factory
from lab.config import get_settings


def _days(text: str) -> float:
    """--older-than-days: a number of days, 0 or more."""
    try:
        days = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of days: {text!r}") from None
    if not 0 <= days <= 3650:
        raise argparse.ArgumentTypeError(f"{text}: must be between 0 and 3650 days")
    return days


def _cmd_purge(args: argparse.Namespace) -> int:
    from lab import trash_actions

    factory = session_factory("trash purge")
    settings = get_settings()
    runs = sweeps = 0
    while True:  # each pass is bounded (trash_actions.PURGE_BATCH); repeat until nothing is due
        report = trash_actions.purge_pass(factory, settings, older_than_days=args.older_than_days)
        runs, sweeps = runs + report.runs, sweeps + report.sweeps
        if not report.runs and not report.sweeps:
            break
    days = settings.trash_days if args.older_than_days is None else args.older_than_days
    print(f"purged {runs} run(s) and {sweeps} sweep(s) in the trash for over {days:g} days")
    return 0


def add_trash_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fedgen-lab trash purge`."""
    trash = sub.add_parser("trash", help="trash commands").add_subparsers(
        dest="trash_command", required=True
    )
    purge = trash.add_parser(
        "purge", help="delete for good what has been in the trash longer than FEDGEN_TRASH_DAYS"
    )
    purge.add_argument(
        "--older-than-days",
        type=_days,
        default=None,
        metavar="D",
        help="instead of FEDGEN_TRASH_DAYS (0: everything in the trash)",
    )
    purge.set_defaults(fn=_cmd_purge)
