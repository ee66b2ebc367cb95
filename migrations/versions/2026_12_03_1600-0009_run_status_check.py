"""runs.status: held to the run statuses by the database

Postgres gets a check constraint (ck_runs_status). SQLite cannot add one without copying the
table (batch mode), and that copy drops the old `runs` with foreign keys on (lab.db turns
them on; the pragma cannot be turned off inside the migration's transaction), which deletes
every run's rounds, users' figures and checkpoints through their ON DELETE CASCADE. There two
triggers refuse the same values on insert and on update, with the same name in the message.
The list is frozen here as it was at this revision; the model builds the same one from
fedgen.status.RunStatus.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 16:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NAME = "ck_runs_status"
STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
CONDITION = "status IN (" + ", ".join(f"'{s}'" for s in STATUSES) + ")"


def _sqlite_trigger(when: str) -> str:
    """A trigger that aborts an insert or update leaving a status outside the list."""
    event = "INSERT" if when == "insert" else "UPDATE OF status"
    return (
        f"CREATE TRIGGER {NAME}_{when} BEFORE {event} ON runs FOR EACH ROW "
        f"WHEN NEW.{CONDITION.replace('status IN', 'status NOT IN')} "
        f"BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: {NAME}'); END"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(_sqlite_trigger("insert"))
        op.execute(_sqlite_trigger("update"))
        return
    op.create_check_constraint(op.f(NAME), "runs", CONDITION)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"DROP TRIGGER IF EXISTS {NAME}_insert")
        op.execute(f"DROP TRIGGER IF EXISTS {NAME}_update")
        return
    op.drop_constraint(op.f(NAME), "runs", type_="check")
