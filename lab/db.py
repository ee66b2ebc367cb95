"""Engine and session factories; no FastAPI here so the worker can share them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy import exc as sa_exc

try:  # orjson parses the per-round metric JSON ~3x faster (the /compare hot path)
    import orjson

    def _loads(text: str | bytes) -> Any:
        return orjson.loads(text)

    def _dumps(obj: Any) -> str:
        return orjson.dumps(obj).decode()

except ImportError:  # pragma: no cover - optional speed-up
    import json

    def _loads(text: str | bytes) -> Any:
        return json.loads(text)

    def _dumps(obj: Any) -> str:
        return json.dumps(obj)


from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # WAL lets the API read while a worker writes; busy_timeout waits instead of failing.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def _async_commit(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("SET synchronous_commit TO off")
    cur.close()
    dbapi_conn.commit()


def make_engine(url: str, *, async_commit: bool = False, **kwargs: Any) -> Engine:
    """An engine for `url`; SQLite gets WAL, busy_timeout and foreign keys.

    async_commit (Postgres only, used by workers): commits return before the WAL flush.
    A server crash may then lose the last few rounds committed (a suffix of them: the log is
    flushed in order). The worker finds out instead of writing past the hole: a round is
    written only when the one before it is stored (RoundGap otherwise), and a run is marked
    succeeded only in a durable commit that finds rounds 0..R all stored; either way it
    resumes from its newest stored checkpoint and replays the lost rounds idempotently.
    """
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        if u.database and u.database != ":memory:":
            Path(u.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        connect_args = {"check_same_thread": False, "timeout": 30}
        engine = create_engine(url, connect_args=connect_args, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    kwargs.setdefault("json_deserializer", _loads)
    kwargs.setdefault("json_serializer", _dumps)
    kwargs.setdefault("pool_pre_ping", True)
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 20)
    engine = create_engine(url, **kwargs)
    if async_commit:
        event.listen(engine, "connect", _async_commit)
    return engine


def db_now(db: Session | Connection) -> datetime:
    """The database's clock (UTC, timezone-aware): leases, heartbeats and the dispatcher are
    timed by it, so a host whose own clock is off neither steals nor keeps leases. SQLite is
    the embedded, one-host default: there the process's clock is the database's."""
    conn = db.connection() if isinstance(db, Session) else db
    if conn.dialect.name == "postgresql":
        now: datetime = conn.execute(text("SELECT clock_timestamp()")).scalar_one()
        return now.astimezone(UTC)
    return datetime.now(UTC)


def durable_commit(session: Session) -> None:
    """Make the session's next commit wait for the log flush (Postgres; SQLite always does).

    A worker's engine commits asynchronously (`async_commit`); a commit made durable also makes
    every earlier commit durable, since the log is flushed in order up to it.
    """
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SET LOCAL synchronous_commit TO on"))


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """A sessionmaker whose objects stay readable after commit."""
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One transaction: commit on success, roll back on any exception."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def is_unavailable(exc: BaseException) -> bool:
    """True when `exc` means the database cannot be reached now (down, restarting, pool exhausted).

    Such errors are answered 503 by the API and retried with back-off by the worker; any other
    database error (a constraint, a bad statement) is a bug and is not.
    """
    if isinstance(exc, sa_exc.TimeoutError | sa_exc.DisconnectionError):
        return True  # pool checkout timed out / connection dropped while pinging
    if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError):
        return True
    if isinstance(exc, sa_exc.DBAPIError):
        return bool(exc.connection_invalidated)
    try:
        import psycopg
    except ImportError:  # pragma: no cover - SQLite-only installs
        return False
    return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
