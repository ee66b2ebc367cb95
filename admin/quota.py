"""`fedgen-lab quota set USER BYTES|default` and `fedgen-lab quota show [USER]`: an admin's
commands for what each member's runs may store (FEDGEN_QUOTA_BYTES unless set per member).

BYTES is a whole number of bytes or a number with a unit: `200GiB`, `1.5 TiB`, `500 MB`
(KiB/MiB/GiB/TiB are powers of 1024, kB/MB/GB/TB of 1000); `default` gives the member the
lab's FEDGEN_QUOTA_BYTES again. Setting one is recorded in the audit log (quota.set, by `cli`).
A lower quota refuses the member's next submissions over it; nothing stored is deleted.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from admin.sessions import session_factory
from fedgen.resources import format_bytes
from lab.config import get_settings

CLI_ACTOR_NAME = "cli"
MAX_QUOTA_BYTES = 1 << 60  # FEDGEN_QUOTA_BYTES' own bound
UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}
_SIZE = re.compile(r"(?P<n>\d+(\.\d+)?)\s*(?P<unit>[a-zA-Z]*)")


def parse_bytes(text: str) -> int | None:
    """'200GiB' -> 214748364800, '1073741824' -> 1073741824, 'default' -> None; an
    ArgumentTypeError names BYTES and what is allowed."""
    text = text.strip()
    if text.lower() == "default":
        return None
    m = _SIZE.fullmatch(text)
    unit = UNITS.get(m["unit"].lower()) if m else None
    if m is None or unit is None:
        raise argparse.ArgumentTypeError(
            f"BYTES: {text!r} is not a size; give bytes (1073741824), a number with a unit "
            "(200GiB, 1.5TiB, 500MB) or 'default'"
        )
    n = int(float(m["n"]) * unit) if "." in m["n"] else int(m["n"]) * unit
    if n > MAX_QUOTA_BYTES:
        raise argparse.ArgumentTypeError(
            f"BYTES: {text} is over the largest quota, {format_bytes(MAX_QUOTA_BYTES)}"
        )
    return n


def _cmd_set(args: argparse.Namespace) -> int:
    from lab.db import session_scope
    from lab.repository import audit
    from lab.repository import tokens as tokens_repo
    from lab.repository import usage as usage_repo

    settings = get_settings()
    with session_scope(session_factory("quota set")) as session:
        user = tokens_repo.user_by_name(session, args.user)
        if user is None:
            print(f"error: no user {args.user!r}", file=sys.stderr)
            return 2
        was = user.quota_bytes
        usage_repo.set_quota(session, user, args.bytes)
        audit.record(
            session,
            audit.Actor(None, CLI_ACTOR_NAME, None),
            "quota.set",
            "user",
            user.id,
            user=user.name,
            quota_bytes=args.bytes,
            was=was,
        )
        found = usage_repo.member_usage(session, user.id, settings.quota_bytes)
    print(f"{args.user}: {_line(found)}")
    return 0


def _line(u: Any) -> str:
    quota = format_bytes(u.quota_bytes)
    whose = " (FEDGEN_QUOTA_BYTES)" if u.quota_is_default else ""
    return (
        f"quota {quota}{whose}; stored {format_bytes(u.usage_bytes)}, still to come "
        f"{format_bytes(u.reserved_bytes)}; {u.queued_runs} queued of {u.runs} runs"
    )


def _cmd_show(args: argparse.Namespace) -> int:
    from lab.repository import tokens as tokens_repo
    from lab.repository import usage as usage_repo

    settings = get_settings()
    with session_factory("quota show")() as session:
        if args.user is None:
            rows = usage_repo.all_usage(session, settings.quota_bytes)
        else:
            user = tokens_repo.user_by_name(session, args.user)
            if user is None:
                print(f"error: no user {args.user!r}", file=sys.stderr)
                return 2
            rows = [usage_repo.member_usage(session, user.id, settings.quota_bytes)]
    for u in rows:
        print(f"{u.name}: {_line(u)}")
    return 0


def add_quota_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fedgen-lab quota set|show`."""
    quota = sub.add_parser("quota", help="what each member's runs may store").add_subparsers(
        dest="quota_command", required=True
    )
    qs = quota.add_parser(
        "set", help="a member's own quota (instead of FEDGEN_QUOTA_BYTES), or 'default'"
    )
    qs.add_argument("user")
    qs.add_argument(
        "bytes",
        type=parse_bytes,
        metavar="BYTES",
        help="bytes, or a number with a unit (200GiB, 1.5TiB, 500MB), or 'default'",
    )
    qs.set_defaults(fn=_cmd_set)
    show = quota.add_parser("show", help="usage, quota and queued runs of a member (or all)")
    show.add_argument("user", nargs="?", default=None)
    show.set_defaults(fn=_cmd_show)
