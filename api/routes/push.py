"""POST /runs/push: a local run folder (`fedgen push`) stored as a lab run of the token's member,
marked as pushed (versions: origin, host, result_key), counted in the member's quota, refused
with field messages when its spec does not validate, its folder is incomplete or its summary
does not add up; pushing the same folder again answers the run it made the first time."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import fields
from typing import Any

from fastapi import APIRouter, Response, status

from api import service
from api.deps import SessionDep, SettingsDep, SubmitUserDep
from api.errors import FieldErrors
from fedgen.events import RunInfo
from fedgen.fidelity import resolve
from fedgen.resources import format_bytes
from lab.queue import queue_for_device
from lab.repository import push as push_repo
from lab.repository.usage import member_usage
from vocab.footprint import round_bytes
from vocab.pushed_results import result_problems
from vocab.schemas.errors import AUTHED, BODY, error_responses
from vocab.schemas.push import RunPush, RunPushed

router = APIRouter(prefix="/runs", tags=["runs"])


def _info(info: dict[str, Any], spec_hash: str) -> dict[str, Any]:
    """info.json checked as a RunInfo of this spec."""
    names = {f.name for f in fields(RunInfo)}
    try:
        parsed = RunInfo(**{k: v for k, v in info.items() if k in names})
    except TypeError as exc:
        raise FieldErrors([("info", f"not a run's info.json: {exc}")]) from None
    if parsed.spec_hash != spec_hash:
        raise FieldErrors(
            [("info.spec_hash", f"{parsed.spec_hash!r} is not the spec's hash ({spec_hash})")]
        )
    return parsed.to_dict()


def _checkpoints(body: RunPush, rounds: int) -> dict[int, list[dict[str, Any]]]:
    """round -> its files, each decoded and checked against its sha256; the final model's
    (model at round R) is required."""
    out: dict[int, list[dict[str, Any]]] = {}
    for i, ck in enumerate(body.checkpoints):
        try:
            data = base64.b64decode(ck.data, validate=True)
        except (binascii.Error, ValueError):
            raise FieldErrors([(f"checkpoints[{i}].data", "not base64")]) from None
        if hashlib.sha256(data).hexdigest() != ck.sha256:
            raise FieldErrors([(f"checkpoints[{i}].sha256", "does not match the data")])
        if ck.round > rounds:
            raise FieldErrors([(f"checkpoints[{i}].round", f"past the run's last round {rounds}")])
        entry = {"kind": ck.kind, "size": len(data), "sha256": ck.sha256, "data": data}
        out.setdefault(ck.round, []).append(entry)
    if not any(c["kind"] == "model" for c in out.get(rounds, [])):
        raise FieldErrors(
            [("checkpoints", f"the final model (checkpoints/model-{rounds:05d}.pt) is required")]
        )
    return out


def _result_key(result_hash: str, body: RunPush) -> str:
    """The spec's result hash and a digest of the curve: what makes two pushes the same."""
    curve = [(r.round, r.metrics.get("test_acc")) for r in body.rounds]
    digest = hashlib.sha256(json.dumps(curve, separators=(",", ":")).encode()).hexdigest()
    return f"{result_hash}:{digest[:16]}"


@router.post(
    "/push",
    status_code=status.HTTP_201_CREATED,
    responses=error_responses(*AUTHED, *BODY),
)
def push_run(
    body: RunPush,
    session: SessionDep,
    user: SubmitUserDep,
    settings: SettingsDep,
    response: Response,
) -> RunPushed:
    """Store a local run folder as a succeeded lab run (201), or answer the run the same
    folder made before (200, `created` false)."""
    spec = service.validate_spec(body.spec)
    rounds = [r.model_dump() for r in body.rounds]
    problems = result_problems(spec, rounds, body.summary)
    if problems:
        raise FieldErrors(problems)
    info = _info(body.info, spec.spec_hash())
    checkpoints = _checkpoints(body, spec.rounds)
    key = _result_key(spec.result_hash(), body)
    found = push_repo.find_pushed(session, user.id, spec.spec_hash(), key)
    if found is not None:
        response.status_code = status.HTTP_200_OK
        return RunPushed(created=False, run=service.run_public(found))
    size = sum(round_bytes(len(r["users"])) for r in rounds) + sum(
        c["size"] for cs in checkpoints.values() for c in cs
    )
    usage = member_usage(session, user.id, settings.quota_bytes)
    if usage.committed_bytes + size > usage.quota_bytes:
        raise FieldErrors(
            [
                (
                    "checkpoints",
                    f"the pushed run's {format_bytes(size)} + usage "
                    f"{format_bytes(usage.committed_bytes)} is over the quota "
                    f"{format_bytes(usage.quota_bytes)}",
                )
            ]
        )
    run = push_repo.store_pushed(
        session,
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        owner_id=user.id,
        queue=queue_for_device(spec.device, settings.queue_prefix),
        versions={"origin": push_repo.ORIGIN, "host": body.host, "result_key": key},
        info=info,
        rounds=rounds,
        summary=dict(body.summary or {}),
        checkpoints=checkpoints,
        tags=list(body.tags),
        eval_timing=resolve(spec).eval_timing,
        lease_s=settings.lease_s,
        keep_full=settings.keep_full_checkpoints,
        keep_generator=settings.generator_keep_rule,
    )
    session.commit()
    return RunPushed(created=True, run=service.run_public(run))
