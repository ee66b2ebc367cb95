"""A private PostgreSQL server for tests that crash or stop it: `PgServer`.

The suite's shared server (127.0.0.1:5432) is never stopped. This one lives in a temporary
folder owned by the `postgres` user, on its own port, with the same binaries; `crash()` is
`pg_ctl stop -m immediate` (no shutdown checkpoint: what the server had not written is lost,
as in a crash) and `start()` runs crash recovery.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from sqlalchemy import create_engine, text


def _bin_dir() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    return found[-1].parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def available() -> str | None:
    """None when a private server can be made here, else why not."""
    if _bin_dir() is None:
        return "PostgreSQL's server binaries (/usr/lib/postgresql/*/bin)"
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        return "root and runuser (the server runs as the postgres user)"
    return None


class PgServer:
    """initdb + pg_ctl in a temporary folder; `url` names its database `lab`."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        bindir = _bin_dir()
        assert bindir is not None, available()
        self.bin = bindir
        self.root = Path(tempfile.mkdtemp(prefix="fedgen-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        shutil.chown(self.root, "postgres", "postgres")
        self._as_postgres("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-N")
        conf = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.root}'",
            "fsync": "on",
            **(settings or {}),
        }
        with (self.data / "postgresql.conf").open("a") as fh:
            fh.writelines(f"{k} = {v}\n" for k, v in conf.items())
        self.start()
        admin = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text("CREATE DATABASE lab"))
        admin.dispose()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/lab"

    @property
    def admin_url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _as_postgres(self, tool: str, *args: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(self.bin / tool), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=self.root,
        )

    def start(self) -> None:
        """Start (after a crash: recover) and wait until it accepts connections."""
        log = str(self.root / "server.log")
        self._as_postgres("pg_ctl", "-D", str(self.data), "-l", log, "-w", "-t", "60", "start")

    def crash(self) -> None:
        """`pg_ctl stop -m immediate`: every backend dies at once, nothing more is written."""
        self._as_postgres("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def running(self) -> bool:
        with socket.socket() as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def close(self) -> None:
        try:
            self._as_postgres("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass  # already stopped
        deadline = time.monotonic() + 10
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        shutil.rmtree(self.root, ignore_errors=True)
