"""The database sessions of `fedgen-lab`'s one-shot commands (users, tokens, quota, trash,
requeue, checkpoints import): one function for admin/tokens.py, admin/quota.py, admin/trash.py
and admin/maintenance.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lab.config import get_settings
from lab.connections import print_connections

if TYPE_CHECKING:  # the commands import SQLAlchemy when they run, not at the CLI's start
    from sqlalchemy.orm import Session, sessionmaker


def session_factory(command: str) -> sessionmaker[Session]:
    """Print what `command` connects to, migrate the database when FEDGEN_AUTO_UPGRADE is on,
    and return a sessionmaker on it."""
    from lab.db import make_engine, make_sessionmaker
    from migrations.apply import upgrade

    s = get_settings()
    print_connections(command, s)
    s.ensure_dirs()
    if s.auto_upgrade:
        upgrade(s.database_url)
    return make_sessionmaker(make_engine(s.database_url))
