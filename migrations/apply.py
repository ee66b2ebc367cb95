"""Apply Alembic migrations from code (`fedgen-lab db upgrade`, API start, tests).

The scripts are the installed `migrations` package (env.py, versions/), found through the
import system: the same code migrates from the source tree and from a wheel installed
anywhere, whatever the current directory, without alembic.ini.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection

import migrations


def script_location() -> Path:
    """The folder of the installed `migrations` package."""
    where = Path(migrations.__file__).resolve().parent
    if not (where / "env.py").is_file() or not (where / "versions").is_dir():
        raise RuntimeError(f"{where} holds no Alembic scripts (env.py, versions/)")
    return where


def alembic_config(url: str | None = None, connection: Connection | None = None) -> Config:
    """An Alembic config pointing at the migrations package, for `url` or an open connection."""
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()).replace("%", "%%"))
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def upgrade(url: str | None = None, connection: Connection | None = None) -> None:
    """`alembic upgrade head` on `url` (default: FEDGEN_DATABASE_URL) or a connection."""
    command.upgrade(alembic_config(url, connection), "head")
