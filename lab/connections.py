"""What a lab process connects to, as its command prints it: the database and broker URLs with
their passwords hidden, which of them are the embedded SQLite lab, and where checkpoints live.

Every `fedgen-lab` command (admin/) and the worker's own start (worker/main.py) print this block
first, on stderr, so stdout stays the command's own answer.
"""

from __future__ import annotations

import sys
from urllib.parse import urlsplit, urlunsplit

from lab.config import Settings


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
    """What `fedgen-lab <command>` connects to (stderr, so stdout stays the command's own
    answer)."""
    tag = dict.fromkeys(embedded_parts(s), "  (embedded SQLite)")
    lines = [
        f"fedgen-lab {command}",
        f"  database:    {hide_password(s.database_url)}{tag.get('database', '')}",
        f"  broker:      {hide_password(s.broker_url)}{tag.get('broker', '')}",
        f"  checkpoints: in the database (legacy files: {s.checkpoint_root})",
    ]
    print("\n".join(lines), file=sys.stderr, flush=True)
