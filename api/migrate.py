"""Apply Alembic migrations from code (`fedgen-lab db upgrade`, API start, tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection

ROOT = Path(__file__).resolve().parent.parent


def alembic_config(url: str | None = None, connection: Connection | None = None) -> Config:
    """An Alembic config pointing at migrations/, for `url` or an open connection."""
    ini = ROOT / "alembic.ini"
    cfg = Config(str(ini)) if ini.exists() else Config()
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def upgrade(url: str | None = None, connection: Connection | None = None) -> None:
    """`alembic upgrade head` on `url` (default: FEDGEN_DATABASE_URL) or a connection."""
    command.upgrade(alembic_config(url, connection), "head")
