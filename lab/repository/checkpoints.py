"""Checkpoints: rows and their bytes in fixed-size chunk rows, read whole or streamed.

A round's checkpoints are written by lab/repository/metrics.py: write_round, in the round's
transaction (`insert_chunks`, `prune_full`, `prune_generators`: lab/checkpoint_retention.py). A
checkpoint written before checkpoints moved into the database has a `path` in the file store
instead (lab/store.py) until `import_files`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, delete, func, insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from lab.checkpoint_retention import generator_rounds_to_prune
from lab.models import CheckpointChunk, CheckpointRow
from lab.repository import usage
from lab.store import CheckpointStore
from vocab.footprint import KeepRule

CHUNK_BYTES = 1 << 20  # 1 MiB a row: a download holds one at a time
_INSERT_BATCH = 16  # chunks a statement (16 MiB of parameters at most)


class CheckpointMissing(LookupError):
    """A checkpoint's bytes are neither in the database nor in the file store."""


def list_checkpoints(session: Session, run_id: uuid.UUID) -> list[CheckpointRow]:
    """All checkpoints of a run, by round then kind."""
    stmt = select(CheckpointRow).where(CheckpointRow.run_id == run_id)
    return list(session.scalars(stmt.order_by(CheckpointRow.round, CheckpointRow.kind)))


def get_checkpoint(session: Session, run_id: uuid.UUID, ckpt_id: uuid.UUID) -> CheckpointRow | None:
    """One checkpoint of a run, or None."""
    stmt = select(CheckpointRow).where(CheckpointRow.run_id == run_id, CheckpointRow.id == ckpt_id)
    return session.scalar(stmt)


def latest_full(session: Session, run_id: uuid.UUID) -> CheckpointRow | None:
    """The newest 'full' (resumable) checkpoint of a run."""
    stmt = (
        select(CheckpointRow)
        .where(CheckpointRow.run_id == run_id, CheckpointRow.kind == "full")
        .order_by(CheckpointRow.round.desc())
        .limit(1)
    )
    return session.scalar(stmt)


def insert_chunks(conn: Connection, pairs: Sequence[tuple[uuid.UUID, bytes]]) -> None:
    """Store the bytes of each (checkpoint id, data) as CHUNK_BYTES rows (in the caller's
    transaction)."""
    rows: list[dict[str, Any]] = [
        {"checkpoint_id": cid, "seq": i, "data": data[off : off + CHUNK_BYTES]}
        for cid, data in pairs
        for i, off in enumerate(range(0, max(len(data), 1), CHUNK_BYTES))
    ]
    for start in range(0, len(rows), _INSERT_BATCH):
        conn.execute(insert(CheckpointChunk), rows[start : start + _INSERT_BATCH])


def prune_full(conn: Connection, run_id: uuid.UUID, keep: int) -> int:
    """Delete all but the newest `keep` 'full' checkpoints of the run (chunks go with them) and
    take their bytes off the run's stored_bytes; generator and model checkpoints are kept.
    Returns how many were removed."""
    newest = (
        select(CheckpointRow.round)
        .where(CheckpointRow.run_id == run_id, CheckpointRow.kind == "full")
        .order_by(CheckpointRow.round.desc())
        .limit(max(keep, 1))
    )
    return delete_counted(
        conn, run_id, CheckpointRow.kind == "full", CheckpointRow.round.not_in(newest)
    )


def delete_counted(conn: Connection, run_id: uuid.UUID, *where: ColumnElement[bool]) -> int:
    """Delete the run's checkpoints matching `where` (chunks go with them) and take their bytes
    off the run's stored_bytes, in the caller's transaction: every pruning goes through here,
    so its owner's usage stays what is stored. Returns how many were removed."""
    stmt = delete(CheckpointRow).where(CheckpointRow.run_id == run_id, *where)
    sizes = list(conn.execute(stmt.returning(CheckpointRow.size)).scalars())
    usage.add_stored(conn, run_id, -sum(sizes))
    return len(sizes)


def prune_generators(conn: Connection, run_id: uuid.UUID, rule: KeepRule) -> list[int]:
    """Delete the run's generator checkpoints `rule` no longer keeps (chunks go with them; the
    newest is always kept) and take their bytes off the run's stored_bytes. Returns their
    rounds."""
    if rule.keeps_all:
        return []
    present = conn.execute(
        select(CheckpointRow.round).where(
            CheckpointRow.run_id == run_id, CheckpointRow.kind == "generator"
        )
    ).scalars()
    gone = generator_rounds_to_prune(list(present), rule)
    if not gone:
        return []
    delete_counted(conn, run_id, CheckpointRow.kind == "generator", CheckpointRow.round.in_(gone))
    return gone


def _chunk_count(session: Session, ckpt_id: uuid.UUID) -> int:
    stmt = select(func.count()).where(CheckpointChunk.checkpoint_id == ckpt_id)
    return int(session.scalar(stmt) or 0)


def iter_bytes(
    factory: sessionmaker[Session], row: CheckpointRow, store: CheckpointStore | None = None
) -> Iterator[bytes]:
    """The checkpoint's bytes, one chunk at a time (each read in its own short session, so a
    slow download holds no transaction open). A legacy row streams its file from `store`."""
    if row.path is not None:
        if store is None:
            raise CheckpointMissing(f"checkpoint {row.id} is a file and no store was given")
        yield from store.iter_chunks(row.path)
        return
    seq = 0
    while True:
        with factory() as s:
            stmt = select(CheckpointChunk.data).where(
                CheckpointChunk.checkpoint_id == row.id, CheckpointChunk.seq == seq
            )
            data = s.scalar(stmt)
        if data is None:
            return
        yield bytes(data)
        seq += 1


def available(session: Session, row: CheckpointRow, store: CheckpointStore | None) -> bool:
    """Whether the checkpoint's bytes can be read (chunks stored, or its file present)."""
    if row.path is None:
        return row.size == 0 or _chunk_count(session, row.id) > 0
    if store is None:
        return False
    try:
        return store.path(row.path).is_file()
    except ValueError:
        return False


def read_bytes(
    factory: sessionmaker[Session], row: CheckpointRow, store: CheckpointStore | None = None
) -> bytes:
    """The whole checkpoint (a worker resuming); CheckpointMissing when its bytes are gone."""
    try:
        data = b"".join(iter_bytes(factory, row, store))
    except (OSError, ValueError) as exc:
        raise CheckpointMissing(f"checkpoint {row.id}: {exc}") from exc
    if len(data) != row.size:
        raise CheckpointMissing(f"checkpoint {row.id}: {len(data)} bytes of {row.size}")
    return data


def legacy_paths_of_run(session: Session, run_id: uuid.UUID) -> list[str]:
    """Store paths of a run's checkpoints that are still files (to delete them with the run)."""
    stmt = select(CheckpointRow.path).where(
        CheckpointRow.run_id == run_id, CheckpointRow.path.is_not(None)
    )
    return [p for p in session.scalars(stmt) if p]


def import_files(
    factory: sessionmaker[Session], store: CheckpointStore
) -> tuple[int, int, list[str]]:
    """Move every file checkpoint into the database, one checkpoint a transaction, checking its
    sha256; returns (imported, bytes, problems). The file is removed once its rows committed."""
    import hashlib

    with factory() as s:
        rows = list(s.scalars(select(CheckpointRow).where(CheckpointRow.path.is_not(None))))
    done = total = 0
    problems: list[str] = []
    for row in rows:
        assert row.path is not None
        try:
            data = store.read(row.path)
        except (OSError, ValueError) as exc:
            problems.append(f"{row.path}: {exc}")
            continue
        if hashlib.sha256(data).hexdigest() != row.sha256:
            problems.append(f"{row.path}: sha256 differs from the database's; left as it is")
            continue
        with factory() as s, s.begin():
            conn = s.connection()
            conn.execute(delete(CheckpointChunk).where(CheckpointChunk.checkpoint_id == row.id))
            insert_chunks(conn, [(row.id, data)])
            conn.execute(
                update(CheckpointRow)
                .where(CheckpointRow.id == row.id)
                .values(path=None, size=len(data))
            )
        store.delete([row.path])
        done, total = done + 1, total + len(data)
    return done, total, problems
