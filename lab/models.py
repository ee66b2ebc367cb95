"""ORM tables: users and tokens, sweeps, runs, per-round metrics and users' figures, checkpoints,
and the dispatcher's tables (live workers, the one-row dispatcher lease).

Portable types only (Uuid, JSON, timezone-aware DateTime) so the same models
serve SQLite and PostgreSQL; migrations/ mirrors them (a test checks no diff).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Computed,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    Uuid,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from lab.round_pack import pack_metrics, unpack_metrics
from vocab.run_status import RUN_STATUSES, Priority, RunStatus

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    """Timezone-aware now (UTC)."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware DateTime that also reads back aware from SQLite (which drops the offset)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:  # noqa: ARG002
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


class PackedMetrics(TypeDecorator[dict[str, Any]]):
    """A round's metrics dict, stored packed (lab/round_pack.py): a fifth of its JSON's size."""

    impl = LargeBinary
    cache_ok = True

    def process_bind_param(self, value: dict[str, Any] | None, dialect: Any) -> bytes | None:  # noqa: ARG002
        return None if value is None else pack_metrics(value)

    def process_result_value(self, value: bytes | None, dialect: Any) -> dict[str, Any] | None:  # noqa: ARG002
        return None if value is None else unpack_metrics(bytes(value))


class Base(DeclarativeBase):
    """Declarative base with a naming convention, so migrations name constraints stably."""

    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, datetime: UTCDateTime()}


class User(Base):
    """A lab member; `token_hash` is the sha256 of the bearer token (the token is never stored)."""

    __tablename__ = "users"
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # What this member's runs may store together; None: FEDGEN_QUOTA_BYTES (`fedgen-lab quota`).
    quota_bytes: Mapped[int | None] = mapped_column(BigInteger)


class ApiToken(Base):
    """A hashed bearer token of a user (a user may hold several). A token authenticates while
    `revoked_at` is unset and `expires_at` is unset or in the future; a revoked row is kept, so
    the audit log and `tokens list` can still say which token it was."""

    __tablename__ = "api_tokens"
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    user_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(100), default="", server_default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[datetime | None]
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


class Sweep(Base):
    """A grid over spec fields that expanded into runs."""

    __tablename__ = "sweeps"
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(200))
    base: Mapped[dict[str, Any]]
    grid: Mapped[dict[str, Any]]
    owner_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Annotations, editable after submission (PATCH /sweeps/{id}): who changed them last, when.
    note: Mapped[str] = mapped_column(Text, default="", server_default="")
    tags_csv: Mapped[str] = mapped_column(Text, default=",", server_default=",")
    annotated_by: Mapped[str | None] = mapped_column(String(100))
    annotated_at: Mapped[datetime | None]
    # In the trash since (DELETE), by whom; hidden from lists, restorable until purged.
    deleted_at: Mapped[datetime | None] = mapped_column(index=True)
    deleted_by: Mapped[str | None] = mapped_column(String(100))


class Run(Base):
    """One federated run: its spec, its state machine and its lease."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_status_created", "status", "created_at"),
        # A sweep's runs newest first (GET /runs?sweep_id=): an old sweep's runs are otherwise
        # found by walking the creation-time index back past every newer run.
        Index("ix_runs_sweep_created", "sweep_id", "created_at"),
        # A member's queued and running runs (lab/repository/usage.py, at every submission and
        # GET /me). No column a round's update sets (lab/repository/metrics.py: round_columns) may
        # be in any index of this table, INCLUDE columns too: each round's update of the row
        # then stays heap-only (HOT), not a new row copy and an entry in every index. Migration
        # 0015 also keeps the row small on Postgres (toast_tuple_target 256: the JSON columns
        # out of line), so a round's new version fits on the row's page.
        Index("ix_runs_owner_status", "owner_id", "status"),
        # The one list of statuses (vocab.run_status). Migration 0009 adds it: this constraint on
        # Postgres, two triggers on SQLite (a constraint there would mean copying the table).
        CheckConstraint(
            "status IN (" + ", ".join(f"'{s}'" for s in RUN_STATUSES) + ")", name="status"
        ).ddl_if(dialect="postgresql"),
        # `where=` filters (lab.repository.spec_filter) on Postgres: containment (@>) in the
        # jsonb spec. SQLite filters by scanning; there the index is kept empty (WHERE 0).
        Index(
            "ix_runs_spec_search",
            "spec_search",
            postgresql_using="gin",
            postgresql_ops={"spec_search": "jsonb_path_ops"},
            sqlite_where=text("0"),
        ),
        # q= and tag= (lab.repository.run_list) match LIKE '%...%' on these expressions:
        # pg_trgm GIN indexes on Postgres (migration 0013, which skips them without pg_trgm).
        *(
            Index(name, text(f"{expr} gin_trgm_ops"), postgresql_using="gin").ddl_if(
                dialect="postgresql"
            )
            for name, expr in (
                ("ix_runs_note_trgm", "lower(note)"),
                ("ix_runs_tags_trgm", "lower(tags_csv)"),
            )
        ),
    )
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    spec: Mapped[dict[str, Any]]
    # The spec again as Postgres jsonb, generated from `spec` (never written): a json column
    # would be parsed again for each row a filter rechecks (~20 us a run). `spec` stays json, so
    # the spec reads back in the order it was submitted. On SQLite a virtual column, unused.
    spec_search: Mapped[dict[str, Any] | None] = mapped_column(
        JSON().with_variant(JSONB(), "postgresql"), Computed("spec"), deferred=True
    )
    spec_hash: Mapped[str] = mapped_column(String(64), index=True)
    algorithm: Mapped[str] = mapped_column(String(32), index=True)
    dataset: Mapped[str] = mapped_column(String(32), index=True)
    tags_csv: Mapped[str] = mapped_column(
        Text, default=","
    )  # ",a,b," so LIKE '%,a,%' filters portably
    rounds: Mapped[int] = mapped_column(Integer)
    # The broker queue the run was sent to, FEDGEN_QUEUE_PREFIX (at most 50 chars) included.
    queue: Mapped[str] = mapped_column(String(64), default="cpu")
    partition_fingerprint: Mapped[str | None] = mapped_column(String(64))
    owner_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("users.id"), index=True)
    # Loaded with the run by the repository's queries (a join), or found in the session.
    owner: Mapped[User] = relationship()
    sweep_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("sweeps.id", ondelete="SET NULL"), index=True
    )
    status: Mapped[str] = mapped_column(String(16), default=RunStatus.QUEUED)
    # low | normal | high: a submission attribute (not part of the spec); orders the queue.
    priority: Mapped[str] = mapped_column(
        String(8), default=Priority.NORMAL, server_default=Priority.NORMAL.value
    )
    # Set when the dispatcher sends the run's task, cleared when a worker claims it. A run sent and
    # not claimed by next_dispatch_at is re-sent if its message is missing (back-off per run).
    dispatched_at: Mapped[datetime | None]
    dispatch_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    next_dispatch_at: Mapped[datetime | None]
    # The worker (node name) the last send went to: its own queue holds the message.
    dispatched_to: Mapped[str | None] = mapped_column(String(200))
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    worker: Mapped[str | None] = mapped_column(String(200))
    lease_token: Mapped[str | None] = mapped_column(String(64))
    lease_expires_at: Mapped[datetime | None]
    heartbeat_at: Mapped[datetime | None]
    device: Mapped[str | None] = mapped_column(String(100))
    current_round: Mapped[int] = mapped_column(Integer, default=-1)
    last_acc: Mapped[float | None] = mapped_column(Float)
    best_acc: Mapped[float | None] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    info: Mapped[dict[str, Any] | None]
    summary: Mapped[dict[str, Any] | None]
    versions: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # One entry per start of the simulation (first claim, then each resume): where it ran, with
    # which numerics, from which round (lab/repository/runs.py: record_start).
    segments: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    # Annotations: `note` and `tags_csv` start as the spec's note and tags and are edited with
    # PATCH /runs/{id} (the spec keeps what was submitted); who changed them last, when.
    note: Mapped[str] = mapped_column(Text, default="", server_default="")
    annotated_by: Mapped[str | None] = mapped_column(String(100))
    annotated_at: Mapped[datetime | None]
    # What the run cost, over all its segments: the largest peak resident memory of a worker
    # process that ran it, the CPU seconds of its simulation, the GPU's peak allocated memory.
    peak_rss_bytes: Mapped[int | None] = mapped_column(BigInteger)
    cpu_s: Mapped[float | None] = mapped_column(Float)
    gpu_peak_bytes: Mapped[int | None] = mapped_column(BigInteger)
    # CUDA out-of-memory failures so far (one re-queue on a slot with more free memory, then fail).
    oom_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # In the trash since (DELETE of the run or of its sweep), by whom; hidden from lists and
    # restorable until FEDGEN_TRASH_DAYS have passed, then purged with its rounds and checkpoints.
    deleted_at: Mapped[datetime | None] = mapped_column(index=True)
    deleted_by: Mapped[str | None] = mapped_column(String(100))
    # What the run stores now (its rounds by vocab.footprint.round_bytes, its checkpoints' sizes),
    # kept in the transactions that write and prune them; its owner's usage is the sum over
    # their runs, trashed ones included until purged (lab/repository/usage.py).
    stored_bytes: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # vocab.footprint.footprint_estimate at submission: what it will store once finished (None:
    # submitted before quotas). Until it ends, the rest of it counts against its owner's quota.
    estimated_bytes: Mapped[int | None] = mapped_column(BigInteger)


class RoundMetrics(Base):
    """The scalar metrics of one round; unique on (run, round) so a replay is a no-op."""

    __tablename__ = "round_metrics"
    run_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
    )
    round: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    test_acc: Mapped[float | None] = mapped_column(Float)
    metrics: Mapped[dict[str, Any]] = mapped_column(PackedMetrics())
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class RoundUsers(Base):
    """Every user's test and training figures of one round, packed into one value
    (lab/round_pack.py: pack_users); one row per round, unique on (run, round) like the round's."""

    __tablename__ = "round_users"
    run_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
    )
    round: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class CheckpointRow(Base):
    """A checkpoint: its bytes in `checkpoint_chunks` (written in the round's transaction), or,
    for one written before checkpoints moved into the database, a file in the store
    (FEDGEN_HOME/checkpoints) at `path`, relative to the store root, until it is imported."""

    __tablename__ = "checkpoints"
    __table_args__ = (
        UniqueConstraint("run_id", "round", "kind", name="uq_checkpoints_run_round_kind"),
    )
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    round: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    path: Mapped[str | None] = mapped_column(String(1000))  # a legacy file; None: in the database
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class CheckpointChunk(Base):
    """Bytes seq*CHUNK .. of a checkpoint (lab/repository/checkpoints.py: CHUNK_BYTES): fixed-size
    rows, so a download streams one chunk at a time on either database."""

    __tablename__ = "checkpoint_chunks"
    checkpoint_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("checkpoints.id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Worker(Base):
    """A live worker process and the queue it consumes (one row per queue); slots = runs at once.

    Each process renews heartbeat_at from its dispatch loop; a row older than the worker TTL
    counts as dead, so its slots stop counting toward the queue's free slots. `capabilities`
    is what it can run (worker.capabilities: datasets, devices, threads, code version); a row
    without them (written by an older worker) is taken to load every dataset.
    """

    __tablename__ = "workers"
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    queue: Mapped[str] = mapped_column(String(64), primary_key=True)
    slots: Mapped[int] = mapped_column(Integer, default=1)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    host: Mapped[str | None] = mapped_column(String(255))
    capabilities: Mapped[dict[str, Any] | None]


class Webhook(Base):
    """A user's alert target: events (run.failed, run.succeeded, sweep.finished, study.finished)
    POSTed to `url`, signed with HMAC-SHA256 of the body under `secret`."""

    __tablename__ = "webhooks"
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    owner_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True
    )
    url: Mapped[str] = mapped_column(String(2000))
    events: Mapped[list[str]] = mapped_column(JSON)
    secret: Mapped[str] = mapped_column(String(128))
    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookDelivery(Base):
    """One event for one webhook: pending until delivered or out of tries; unique on
    (webhook, event, subject) so an event about a run or sweep is queued once."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("webhook_id", "event", "subject", name="uq_webhook_deliveries_once"),
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
    )
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    webhook_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    event: Mapped[str] = mapped_column(String(32))
    subject: Mapped[str] = mapped_column(String(64))  # the run's or sweep's id; a test's own id
    payload: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(16), default="pending", server_default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    next_attempt_at: Mapped[datetime | None]
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    delivered_at: Mapped[datetime | None]


class AuditEvent(Base):
    """One destructive or security-relevant act: who (a user, kept by name when the user is
    gone), what (`action`, e.g. run.delete), on what (`subject_kind`, `subject_id`), when and
    from which client address; `detail` holds what else the act needs to be understood."""

    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_actor_at", "actor_id", "at"),)
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    actor_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    actor_name: Mapped[str] = mapped_column(String(100))
    action: Mapped[str] = mapped_column(String(32))
    subject_kind: Mapped[str] = mapped_column(String(16))
    subject_id: Mapped[str] = mapped_column(String(64))
    address: Mapped[str | None] = mapped_column(String(64))
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class DispatcherLease(Base):
    """One row (id 1): who runs a dispatch pass now, until when; a pass takes it, then lets it go."""

    __tablename__ = "dispatcher"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    holder: Mapped[str | None] = mapped_column(String(200))
    expires_at: Mapped[datetime | None]
