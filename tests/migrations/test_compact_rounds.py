"""Migration 0010 (compact per-round storage) keeps every stored value, both ways, on both databases.

Rows are written in the 0009 schema (a JSON object per round, a row per user per round), the
database is upgraded to 0010 and read back through the lab's own reads (round_history,
user_rows), then downgraded to 0009 and compared row by row with what was written.
"""

from __future__ import annotations

import json
import math
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from sqlalchemy import Engine, text

from lab.db import make_engine, make_sessionmaker
from lab.repository import metrics as metrics_repo
from migrations.apply import alembic_config

USER_COLUMNS = ("user", "test_acc", "test_loss", "num_test", "selected", "train_ms", "train_loss")


def _filler(column: sa.Column[Any]) -> Any:
    """A value for a required column the test does not care about."""
    kind = column.type.python_type if not isinstance(column.type, sa.JSON) else dict
    if kind is uuid.UUID:
        return uuid.uuid4()
    return {
        str: "x",
        int: 0,
        float: 0.0,
        bool: False,
        dict: {},
        list: [],
        datetime: datetime.now(UTC),
    }[kind]


def _insert_filled(engine: Engine, name: str, values: dict[str, Any]) -> None:
    """Insert a row into `name` as the database has it now, filling required columns."""
    table = sa.Table(name, sa.MetaData(), autoload_with=engine)
    if engine.dialect.name == "sqlite":  # a reflected Uuid is CHAR(32): the hex, as Uuid stores it
        values = {k: v.hex if isinstance(v, uuid.UUID) else v for k, v in values.items()}
    row = {
        c.name: _filler(c)
        for c in table.columns
        if not c.nullable and c.server_default is None and c.name not in values
    }
    with engine.begin() as conn:
        conn.execute(table.insert().values({**row, **values}))


def _old_rows(pg: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(round_metrics rows' round and metrics, user_metrics rows) of one run, in the 0009 shape:
    float32 values as a run writes them, float64 ones that float32 would round, extremes, nulls,
    users that are not 0..n-1, a round without users and a metric no code names."""
    f32 = 0.05000000074505806
    awkward = [0.1, 1 / 3, 1e300, -0.0, 5e-324, 2.306434765625, 123456.789012345]
    # Postgres' float columns hold infinities (SQLite's turn them to NULL); a round's metrics
    # never do (write_round drops what is not finite).
    extremes = [math.inf, -math.inf] if pg else [1e-300, -1e300]
    rounds = [
        {"round": 0, "metrics": {"test_acc": 0.0692, "lr": 0.009999999999999998, "plugin_x": 7}},
        {"round": 1, "metrics": {f"k{i}": v for i, v in enumerate(awkward)} | {"test_acc": f32}},
        {"round": 2, "metrics": {}},
        {"round": 3, "metrics": {"time_total_ms": 5119.464717000028, "é_unicode": -1.5}},
    ]
    users: list[dict[str, Any]] = []
    for u in range(20):  # round 0: every user, float32 figures, half selected
        sel = u % 2 == 0
        users.append(
            dict(
                zip(
                    USER_COLUMNS,
                    (u, f32 * u, 2.3033151626586914, 150 + u, sel, 28.1496 if sel else None, None),
                    strict=True,
                )
            )
        )
    for i, u in enumerate((3, 7, 1000)):  # round 1: three users, float64 figures
        values = (u, awkward[i], extremes[i % 2], 2**31 - 1 - i, True, 1 / 7, 1e-310)
        users.append(dict(zip(USER_COLUMNS, values, strict=True)))
    users.append(dict(zip(USER_COLUMNS, (0, 1.0, 0.0, 0, False, None, 0.5), strict=True)))
    for row in users[20:23]:
        row["round"] = 1
    users[23]["round"] = 3  # round 2 has no users
    for row in users[:20]:
        row["round"] = 0
    return rounds, users


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


def _assert_rows_equal(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.keys() == w.keys()
        for k in w:
            assert _same(g[k], w[k]) or (g[k] is None and w[k] is None), (k, g[k], w[k])


def test_every_value_survives_upgrade_and_downgrade(bare_url: str) -> None:
    cfg = alembic_config(bare_url)
    command.upgrade(cfg, "0009")
    engine = make_engine(bare_url, pool_size=1)
    pg = engine.dialect.name == "postgresql"
    rounds, users = _old_rows(pg)
    user_id, run_id = uuid.uuid4(), uuid.uuid4()
    _insert_filled(engine, "users", {"id": user_id, "name": "mig"})
    _insert_filled(engine, "runs", {"id": run_id, "owner_id": user_id, "status": "succeeded"})
    for r in rounds:
        _insert_filled(engine, "round_metrics", {"run_id": run_id, **r})
    for u in users:
        _insert_filled(engine, "user_metrics", {"run_id": run_id, **u})
    engine.dispose()

    command.upgrade(cfg, "0010")
    engine = make_engine(bare_url, pool_size=1)
    with make_sessionmaker(engine)() as s:
        history = metrics_repo.round_history(s, [run_id])[run_id]
        got_users = metrics_repo.user_rows(s, run_id, None, None, limit=1000)
        first_two_of_round_1 = metrics_repo.user_rows(s, run_id, 1, 1, limit=2)
    assert [r for r, _ in history] == [r["round"] for r in rounds]
    for (_, got), want in zip(history, rounds, strict=True):
        assert list(got) == list(want["metrics"])  # the keys, in their order
        assert all(_same(got[k], float(v)) for k, v in want["metrics"].items())
    by_key = sorted(users, key=lambda u: (u["round"], u["user"]))
    want_users = [{"round": u["round"], **{c: u[c] for c in USER_COLUMNS}} for u in by_key]
    _assert_rows_equal(got_users, want_users)
    assert first_two_of_round_1 == got_users[20:22]
    engine.dispose()

    command.downgrade(cfg, "0009")
    engine = make_engine(bare_url, pool_size=1)
    with engine.connect() as c:
        back_rounds = c.execute(text("SELECT round, metrics FROM round_metrics ORDER BY round"))
        columns = ", ".join(f'"{k}"' for k in USER_COLUMNS)
        back_users = c.execute(
            text(f'SELECT round, {columns} FROM user_metrics ORDER BY round, "user"')
        )
        round_list = [dict(r._mapping) for r in back_rounds]
        user_list = [dict(r._mapping) for r in back_users]
    engine.dispose()
    for got, want in zip(round_list, rounds, strict=True):
        stored = got["metrics"]
        metrics = stored if isinstance(stored, dict) else json.loads(stored)
        assert got["round"] == want["round"]
        assert all(_same(metrics[k], float(v)) for k, v in want["metrics"].items())
        assert metrics.keys() == want["metrics"].keys()
    _assert_rows_equal([{**u, "selected": bool(u["selected"])} for u in user_list], want_users)


def test_sqlite_template_is_at_head(sqlite_template: Path, tmp_path: Path) -> None:
    """The packed columns exist after `upgrade head` (what every other test runs on)."""
    path = tmp_path / "copy.db"
    shutil.copy(sqlite_template, path)
    engine = make_engine(f"sqlite:///{path}")
    names = set(sa.inspect(engine).get_table_names())
    engine.dispose()
    assert "round_users" in names
    assert "user_metrics" not in names
