"""A private PostgreSQL server for tests that crash or stop it: `PgServer`.

The suite's shared server (127.0.0.1:5432) is never stopped. This one lives in a temporary
folder owned by the `postgres` user, on its own port, with the same binaries; `crash()` is
`pg_ctl stop -m immediate` (no shutdown checkpoint: what the server had not written is lost,
as in a crash) and `start()` runs crash recovery.

By default it listens on 127.0.0.1 only. The multi-host drill (tests/multihost) gives it a
`host` address to listen on instead, `trust` subnets whose clients need no password, and a
`wrap` command prefix (`ip netns exec NS`) so that the server runs inside a network namespace.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
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
    """initdb + pg_ctl in a temporary folder; `url` names its database `lab`.

    `host`: the one address it listens on (and that `url` names); `trust`: CIDR subnets
    allowed in over TCP without a password (127.0.0.1 always is); `wrap`: a command prefix
    every server command runs under (e.g. `["ip", "netns", "exec", "lab-x"]`).
    """

    def __init__(
        self,
        settings: dict[str, str] | None = None,
        *,
        host: str = "127.0.0.1",
        trust: Sequence[str] = (),
        wrap: Sequence[str] = (),
    ) -> None:
        bindir = _bin_dir()
        assert bindir is not None, available()
        self.bin = bindir
        self.host = host
        self.wrap = list(wrap)
        self.root = Path(tempfile.mkdtemp(prefix="fedgen-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        shutil.chown(self.root, "postgres", "postgres")
        self._as_postgres("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-N")
        conf = {
            "listen_addresses": f"'{host}'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.root}'",
            "fsync": "on",
            **(settings or {}),
        }
        with (self.data / "postgresql.conf").open("a") as fh:
            fh.writelines(f"{k} = {v}\n" for k, v in conf.items())
        with (self.data / "pg_hba.conf").open("a") as fh:
            fh.writelines(f"host all all {cidr} trust\n" for cidr in trust)
        self.start()
        admin = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text("CREATE DATABASE lab"))
        admin.dispose()
        self.url = f"postgresql+psycopg://postgres@{host}:{self.port}/lab"

    @property
    def admin_url(self) -> str:
        return f"postgresql+psycopg://postgres@{self.host}:{self.port}/postgres"

    def _as_postgres(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self.wrap, "runuser", "-u", "postgres", "--", str(self.bin / tool), *args],
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
            return s.connect_ex((self.host, self.port)) == 0

    def close(self) -> None:
        try:
            self._as_postgres("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass  # already stopped
        deadline = time.monotonic() + 10
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        shutil.rmtree(self.root, ignore_errors=True)
