"""Checkpoints of a run: list, and download (streamed chunk by chunk from the database, with
the sha256 in a header; a checkpoint written before they moved there streams from its file)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status
from fastapi.responses import StreamingResponse

from api.deps import (
    RunDep,
    SessionDep,
    SessionFactoryDep,
    SettingsDep,
    parse_uuid,
)
from lab import checkpoint_retention as retention
from lab.repository import checkpoints as ckpt_repo
from lab.store import CheckpointStore
from vocab.schemas.checkpoints import CheckpointPublic, CheckpointsPublic, PrunedPublic
from vocab.schemas.errors import AUTHED, error_responses

router = APIRouter(prefix="/runs/{run_id}/checkpoints", tags=["checkpoints"])


@router.get("", responses=error_responses(*AUTHED, 404))
def list_checkpoints(run: RunDep, session: SessionDep, settings: SettingsDep) -> CheckpointsPublic:
    """All checkpoints of a run, and which it wrote and no longer has (pruned) and why."""
    rows = ckpt_repo.list_checkpoints(session, run.id)
    gone = retention.pruned(
        run.spec,
        run.current_round,
        [(c.round, c.kind) for c in rows],
        settings.keep_full_checkpoints,
        settings.generator_keep_rule,
        settings.keep_generator_checkpoints,
    )
    return CheckpointsPublic(
        data=[CheckpointPublic.model_validate(c) for c in rows],
        pruned=[PrunedPublic(kind=p.kind, rounds=p.rounds, reason=p.reason) for p in gone],
    )


@router.get(
    "/{ckpt_id}/download",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "the checkpoint file (torch.save format)",
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            },
            "headers": {"X-Checkpoint-SHA256": {"schema": {"type": "string"}}},
        },
        **error_responses(*AUTHED, 404, 410),
    },
)
def download_checkpoint(
    run: RunDep,
    ckpt_id: str,
    session: SessionDep,
    settings: SettingsDep,
    factory: SessionFactoryDep,
) -> StreamingResponse:
    """The checkpoint's bytes (torch.save format), header X-Checkpoint-SHA256."""
    row = ckpt_repo.get_checkpoint(session, run.id, parse_uuid(ckpt_id, "checkpoint"))
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"checkpoint {ckpt_id} not found")
    store = CheckpointStore(settings.checkpoint_root)
    if not ckpt_repo.available(session, row, store):
        raise HTTPException(
            status.HTTP_410_GONE,
            "checkpoint file is missing from this host's store (written before checkpoints "
            "moved into the database; import it with `fedgen-lab checkpoints import` where it is)",
        )
    name = f"{run.id}-r{row.round}-{row.kind}.pt"
    return StreamingResponse(
        ckpt_repo.iter_bytes(factory, row, store),
        media_type="application/octet-stream",
        headers={
            "X-Checkpoint-SHA256": row.sha256,
            "Content-Length": str(row.size),
            "Content-Disposition": f'attachment; filename="{name}"',
        },
    )
