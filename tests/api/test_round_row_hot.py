"""A stored round updates its run row in place: no column the round's UPDATE sets is indexed.

With one (stored_bytes, an INCLUDE column of ix_runs_owner_status) every round wrote a new copy
of the whole run row and an entry in each of the runs table's indexes, ~3.4 KB a round the
database kept after VACUUM (bench/storage_per_round.py measures it from outside). Without, the
round's UPDATE is heap-only (HOT) on PostgreSQL: the new version stays on the row's page,
which holds several of them since the row's JSON values are out of line (TOAST).
"""

from __future__ import annotations

import hashlib
import re
import uuid

import pytest
from sqlalchemy import Engine, text, update
from sqlalchemy.orm import Session

from lab.db import make_engine
from lab.models import Base, Run
from lab.repository import metrics as metrics_repo
from tests.support import factories as f
from tests.support.postgres import truncate

# One transaction's versions of the row, none prunable yet: they all fit on the row's page only
# when the row is small (its JSON out of line, migration 0015); toasted only down to ~2 KB (the
# default), four fit. One transaction: the test does not depend on pruning, which other
# sessions' snapshots can hold back.
ROUNDS = 5
# A run row over the TOAST threshold (~2 KB) in several mid-sized values, as a real run's is
# once it has started (spec, its jsonb copy, info, segments): a note (in the spec, its copy and
# the note column) that does not compress.
NOTE = " ".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(8))
# This connection's own updates of `runs` not yet reported: no other session's count.
XACT_UPDATES = text(
    "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables "
    "WHERE relid = CAST('runs' AS regclass)"
)


def _indexed_names(definition: str) -> set[str]:
    """The words of an index's definition: its columns, INCLUDE columns and expressions'."""
    return set(re.findall(r"[a-z_]+", definition.lower()))


def test_no_index_of_runs_holds_a_column_a_round_sets() -> None:
    sets = metrics_repo.round_columns()
    assert {"current_round", "stored_bytes", "heartbeat_at"} <= sets
    for index in Base.metadata.tables["runs"].indexes:
        words = {c.name for c in index.columns} | set(
            index.dialect_options["postgresql"]["include"] or []
        )
        for expr in index.expressions:
            words |= _indexed_names(str(expr))
        assert not words & sets, f"{index.name} holds {sorted(words & sets)}"


@pytest.mark.postgres
def test_rounds_update_the_run_row_heap_only_on_postgres(pg_url: str) -> None:
    """The migrated database's indexes of `runs` hold no such column, and rounds written through
    write_round update the run row heap-only (HOT) every time."""
    engine = make_engine(pg_url, pool_size=1)
    try:
        _check_indexes(engine)
        _check_rounds(engine, pg_url)
    finally:
        truncate(engine)
        engine.dispose()


def _check_indexes(engine: Engine) -> None:
    with engine.connect() as c:
        defs = c.execute(
            text(
                "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index "
                "WHERE indrelid = CAST('runs' AS regclass)"
            )
        ).all()
    assert defs
    sets = metrics_repo.round_columns()
    for name, definition in defs:
        held = _indexed_names(definition.partition(" USING ")[2]) & sets
        assert not held, f"{name} holds {sorted(held)}: {definition}"


def _check_rounds(engine: Engine, url: str) -> None:
    with Session(engine) as s:
        user, _ = f.create_user(s, f"u{uuid.uuid4().hex[:6]}")
        run_id = f.create_run(s, user, note=NOTE).id
        s.execute(update(Run).where(Run.id == run_id).values(lease_token="tok", status="running"))
        s.commit()
    # A connection of its own, one transaction: its statistics are these rounds' updates only.
    writer = make_engine(url, pool_size=1)
    try:
        with Session(writer) as s:
            for r in range(ROUNDS):
                stored = metrics_repo.write_round(
                    s,
                    run_id,
                    "tok",
                    round_=r,
                    metrics={"test_acc": 0.1 * r},
                    users=[],
                    checkpoints=[],
                    lease_s=60,
                )
                assert stored
            upd, hot = s.execute(XACT_UPDATES).one()
            s.commit()
    finally:
        writer.dispose()
    assert upd >= ROUNDS
    assert hot == upd
