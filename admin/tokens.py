"""`fedgen-lab tokens create|list|revoke` and the token part of `users create`: an admin's
commands on the lab's database for members' API tokens.

A new token is printed once (the last line, as `users create` does); only its hash is stored.
FEDGEN_TOKEN_MAX_DAYS caps a new token's lifetime (and is its lifetime when none is asked).
Creating and revoking are recorded in the audit log as done by `cli`.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from datetime import datetime

from admin.sessions import session_factory
from lab.config import get_settings
from lab.security import LifetimeTooLong, lifetime_days

CLI_ACTOR_NAME = "cli"


def _lifetime(requested: int | None) -> int | None:
    """The days a new token lives; LifetimeTooLong names --expires-days and the cap."""
    try:
        return lifetime_days(requested, get_settings().token_max_days)
    except LifetimeTooLong as exc:
        raise LifetimeTooLong(f"--expires-days: {exc}") from None


def _when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M") + "Z" if at is not None else "-"


def create_and_print(args: argparse.Namespace, *, create_user: bool) -> int:
    """`users create NAME` (the user made if new) or `tokens create USER` (an existing user):
    a new token, printed as the last line, recorded in the audit log."""
    from lab.db import session_scope
    from lab.repository import audit
    from lab.repository import tokens as tokens_repo
    from lab.repository import users as users_repo

    try:
        days = _lifetime(args.expires_days)
    except LifetimeTooLong as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    command = "users create" if create_user else "tokens create"
    with session_scope(session_factory(command)) as session:
        if create_user:
            user, secret = users_repo.create_user(
                session, args.name, args.admin, token_name=args.token_name, expires_days=days
            )
            found = tokens_repo.find(session, secret)
            assert found is not None
            token = found[0]
        else:
            found_user = tokens_repo.user_by_name(session, args.user)
            if found_user is None:
                print(
                    f"error: no user {args.user!r}; create one with `fedgen-lab users create "
                    f"{args.user}`",
                    file=sys.stderr,
                )
                return 2
            user = found_user
            token, secret = tokens_repo.create_token(
                session, user.id, name=args.token_name, expires_days=days
            )
        expires = token.expires_at.isoformat() if token.expires_at else None
        audit.record(
            session,
            audit.Actor(None, CLI_ACTOR_NAME, None),
            "token.create",
            "token",
            token.id,
            user=user.name,
            name=token.name,
            expires_at=expires,
        )
        role, name, token_id = ("admin" if user.is_admin else "user"), user.name, token.id
    what = f"created {role} {name!r}" if create_user else f"created a token of {name!r}"
    until = f", expires {_when(token.expires_at)}" if token.expires_at else ""
    print(f"{what} (token id {token_id}{until}); the token is shown once, only its hash is stored:")
    print(secret)
    return 0


def _cmd_create(args: argparse.Namespace) -> int:
    return create_and_print(args, create_user=False)


def _cmd_list(args: argparse.Namespace) -> int:
    from lab.repository import tokens as tokens_repo

    with session_factory("tokens list")() as session:
        user_id = None
        if args.user is not None:
            user = tokens_repo.user_by_name(session, args.user)
            if user is None:
                print(f"error: no user {args.user!r}", file=sys.stderr)
                return 2
            user_id = user.id
        rows = tokens_repo.list_tokens(session, user_id)
    head = ("id", "user", "name", "created", "last used", "expires", "revoked")
    table = [head] + [
        (
            str(t.id),
            owner,
            t.name or "-",
            _when(t.created_at),
            _when(t.last_used_at),
            _when(t.expires_at),
            _when(t.revoked_at),
        )
        for t, owner in rows
    ]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return 0


def _cmd_revoke(args: argparse.Namespace) -> int:
    from lab.db import session_scope
    from lab.repository import audit
    from lab.repository import tokens as tokens_repo

    if (args.token_id is None) == (args.all is None):
        print("error: give a TOKEN_ID or --all USER (one of them)", file=sys.stderr)
        return 2
    actor = audit.Actor(None, CLI_ACTOR_NAME, None)
    with session_scope(session_factory("tokens revoke")) as session:
        if args.all is not None:
            user = tokens_repo.user_by_name(session, args.all)
            if user is None:
                print(f"error: no user {args.all!r}", file=sys.stderr)
                return 2
            revoked = tokens_repo.revoke_all(session, user.id)
            owner = user.name
        else:
            try:
                found = tokens_repo.get_with_owner(session, uuid.UUID(args.token_id))
            except ValueError:
                found = None
            if found is None:
                print(f"error: no token with id {args.token_id!r}", file=sys.stderr)
                return 2
            token, owner = found
            revoked = [token] if tokens_repo.revoke(session, token) else []
        for token in revoked:
            audit.record(
                session, actor, "token.revoke", "token", token.id, user=owner, name=token.name
            )
    print(f"revoked {len(revoked)} token{'s' * (len(revoked) != 1)} of {owner!r}")
    return 0


def add_token_options(p: argparse.ArgumentParser) -> None:
    """--name and --expires-days of a new token (`tokens create`, `users create`)."""
    p.add_argument("--name", dest="token_name", default="", help="what the token is for")
    p.add_argument(
        "--expires-days",
        type=int,
        default=None,
        help="days until it expires (at most FEDGEN_TOKEN_MAX_DAYS, which is the default when "
        "set; else never)",
    )


def _cmd_users_create(args: argparse.Namespace) -> int:
    return create_and_print(args, create_user=True)


def add_users_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fedgen-lab users create NAME [--admin]`."""
    users = sub.add_parser("users", help="user commands").add_subparsers(
        dest="users_command", required=True
    )
    uc = users.add_parser("create", help="create a user; prints the token as the last line")
    uc.add_argument("name")
    uc.add_argument("--admin", action="store_true")
    add_token_options(uc)
    uc.set_defaults(fn=_cmd_users_create)


def add_tokens_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fedgen-lab tokens create|list|revoke`."""
    tokens = sub.add_parser("tokens", help="API token commands").add_subparsers(
        dest="tokens_command", required=True
    )
    tc = tokens.add_parser(
        "create", help="a new token of an existing user; prints the token as the last line"
    )
    tc.add_argument("user")
    add_token_options(tc)
    tc.set_defaults(fn=_cmd_create)
    tl = tokens.add_parser(
        "list", help="tokens (id, user, name, created, last used, expires, revoked)"
    )
    tl.add_argument("user", nargs="?", default=None, help="only this user's")
    tl.set_defaults(fn=_cmd_list)
    tr = tokens.add_parser("revoke", help="revoke a token by id, or all of a user's with --all")
    tr.add_argument("token_id", nargs="?", default=None)
    tr.add_argument("--all", metavar="USER", default=None, help="every token of USER")
    tr.set_defaults(fn=_cmd_revoke)
