"""GET /workers: the live workers, what each can run and what it runs now."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import SessionDep, SettingsDep, UserDep
from lab.repository import workers as workers_repo
from vocab.schemas.errors import AUTHED, error_responses
from vocab.schemas.workers import WorkerPublic, WorkerRun, WorkersPublic

router = APIRouter(tags=["workers"])


@router.get("/workers", responses=error_responses(*AUTHED))
def list_workers(session: SessionDep, settings: SettingsDep, _user: UserDep) -> WorkersPublic:
    """Live workers (a heartbeat within FEDGEN_WORKER_TTL_S), one per process, with host, slots,
    threads, devices, code version, the datasets they can load and the runs they hold."""
    by_name = workers_repo.by_name(workers_repo.live_rows(session, settings.worker_ttl_s))
    held: dict[str, list[WorkerRun]] = {}
    if by_name:
        for r in workers_repo.runs_held(session, list(by_name)):
            held.setdefault(r.worker, []).append(
                WorkerRun(
                    id=str(r.id),
                    algorithm=r.algorithm,
                    dataset=r.dataset,
                    current_round=r.current_round,
                    rounds=r.rounds,
                )
            )
    out = []
    for name, mine in by_name.items():
        caps = next((r.capabilities for r in mine if r.capabilities), None) or {}
        out.append(
            WorkerPublic(
                name=name,
                host=mine[0].host,
                queues=sorted(r.queue for r in mine),
                slots=max(r.slots for r in mine),
                threads=caps.get("threads"),
                devices=caps.get("devices") or [],
                code_version=caps.get("code_version"),
                datasets=caps.get("datasets"),
                started_at=min(r.started_at for r in mine),
                heartbeat_at=max(r.heartbeat_at for r in mine),
                running=held.get(name, []),
            )
        )
    slots = sum(w.slots for w in out)
    busy = sum(min(len(w.running), w.slots) for w in out)
    return WorkersPublic(workers=out, slots=slots, busy=busy)
