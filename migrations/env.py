"""Alembic environment: target the ORM metadata, batch mode for SQLite, compare types."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from lab.config import get_settings
from lab.db import make_engine
from lab.models import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    return config.get_main_option("sqlalchemy.url") or get_settings().database_url


def _configure(connection: Connection | None = None, url: str | None = None) -> None:
    context.configure(
        connection=connection,
        url=url,
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
        literal_binds=connection is None,
    )


def run_offline() -> None:
    """Emit SQL to stdout without a database."""
    _configure(url=_url())
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    """Apply migrations; reuses a connection handed in through `config.attributes`."""
    given = config.attributes.get("connection")
    if given is not None:
        _configure(connection=given)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(_url())
    try:
        with engine.connect() as connection:
            _configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
