"""Pushed runs: a local run folder stored as a lab run through the worker's own path (claim,
record_start, write_round per round with its checkpoints, finish), in the caller's transaction,
so the lab reads it as any run; and finding one pushed before (the same owner, spec and
result hash: a second push of a folder makes no second run)."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from fedgen.stats import counts_round
from lab.models import Run
from lab.repository import metrics as metrics_repo
from lab.repository import runs as runs_repo
from lab.repository.annotations import tags_csv
from vocab.footprint import KeepRule
from vocab.run_status import RunStatus

ORIGIN = "pushed"  # versions["origin"] of a pushed run


def find_pushed(
    session: Session, owner_id: uuid.UUID, spec_hash: str, result_key: str
) -> Run | None:
    """The owner's run pushed before with this spec and result key, if any (trash included:
    restoring it is the member's choice, not a second copy)."""
    rows = session.scalars(
        select(Run).where(Run.owner_id == owner_id, Run.spec_hash == spec_hash)
    ).all()
    for run in rows:
        v = run.versions or {}
        if v.get("origin") == ORIGIN and v.get("result_key") == result_key:
            return run
    return None


def store_pushed(
    session: Session,
    *,
    spec: dict[str, Any],
    spec_hash: str,
    owner_id: uuid.UUID,
    queue: str,
    versions: dict[str, Any],
    info: dict[str, Any],
    rounds: Sequence[Mapping[str, Any]],
    summary: dict[str, Any],
    checkpoints: Mapping[int, list[dict[str, Any]]],
    tags: list[str],
    eval_timing: str,
    lease_s: float,
    keep_full: int,
    keep_generator: KeepRule,
) -> Run:
    """Insert the run and every round (flushed, not committed): succeeded, with `summary`;
    `versions`: the push's marks (origin, host, result_key), kept beside the folder's own
    versions; `checkpoints`: round -> its files ({kind, size, sha256, data})."""
    run = runs_repo.create_run(
        session, spec=spec, spec_hash=spec_hash, owner_id=owner_id, queue=queue, versions=versions
    )
    if tags:
        run.tags_csv = tags_csv([*spec.get("tags", []), *tags])
    session.flush()
    token = secrets.token_hex(16)
    host = str(versions.get("host") or "local")
    device = str(info.get("device") or "cpu")
    if not runs_repo.claim(
        session, run.id, worker=f"push@{host}", token=token, device=device, lease_s=lease_s
    ):
        raise RuntimeError(f"run {run.id}: a new pushed run could not be claimed")
    runs_repo.record_start(session, run.id, token, info=info, device=device)
    total = int(spec["rounds"])
    for r in rounds:
        rnd = int(r["round"])
        metrics_repo.write_round(
            session,
            run.id,
            token,
            round_=rnd,
            metrics={k: v for k, v in r["metrics"].items() if v is not None},
            users=list(r["users"]),
            checkpoints=checkpoints.get(rnd, []),
            lease_s=lease_s,
            keep_full=keep_full,
            keep_generator=keep_generator,
            counted=counts_round(rnd, eval_timing, total),
        )
    runs_repo.finish(session, run.id, token, status=RunStatus.SUCCEEDED, summary=summary)
    # record_start kept the folder's versions (info.json's); the marks of a push go beside them.
    session.execute(
        update(Run)
        .where(Run.id == run.id)
        .values(versions={**dict(info.get("versions") or {}), **versions})
        .execution_options(synchronize_session=False)
    )
    session.flush()
    session.refresh(run)
    return run
