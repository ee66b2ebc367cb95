"""Server-Sent Events: each landed round as a `round` event, status changes as `status`."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from api.db import is_unavailable
from api.deps import StreamRunDep
from api.errors import RETRY_AFTER_S
from api.repository import metrics as metrics_repo
from api.repository import runs as runs_repo
from fedgen.status import TERMINAL

router = APIRouter(tags=["events"])
MAX_ROUND = 2**31 - 1


def _poll(
    request: Request, run_id: uuid.UUID, after: int
) -> tuple[str | None, list[tuple[int, dict[str, Any]]]]:
    with request.app.state.sessionmaker() as s:
        st = runs_repo.status_of(s, run_id)
        rows = metrics_repo.round_history(s, [run_id], after)[run_id]
    return (st[0] if st else None), rows


@router.get("/runs/{run_id}/events")
async def run_events(
    run: StreamRunDep,
    request: Request,
    after_round: Annotated[int, Query(ge=-1, le=MAX_ROUND)] = -1,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """Stream rounds in order and status changes; the stream ends when the run is terminal."""
    run_id = run.id
    start = after_round
    if last_event_id and last_event_id.isdigit() and len(last_event_id) < 10:
        start = max(start, int(last_event_id))
    interval: float = request.app.state.settings_sse_poll_s

    async def stream() -> AsyncIterator[dict[str, Any]]:
        after, last_status = start, None
        while True:
            try:
                st, rows = await run_in_threadpool(_poll, request, run_id, after)
            except Exception as exc:
                if not is_unavailable(exc):
                    raise
                # Headers are sent: say so in the stream, ask the client to reconnect later
                # (EventSource honours `retry`, and Last-Event-ID resumes after the last round).
                yield {
                    "event": "error",
                    "retry": RETRY_AFTER_S * 1000,
                    "data": json.dumps(
                        {"detail": f"database unavailable ({type(exc).__name__}); retry later"}
                    ),
                }
                return
            if st is None:
                yield {"event": "status", "data": json.dumps({"status": "deleted"})}
                return
            for rnd, met in rows:
                after = rnd
                yield {
                    "event": "round",
                    "id": str(rnd),
                    "data": json.dumps({"round": rnd, "metrics": met}),
                }
            if st != last_status:
                last_status = st
                yield {"event": "status", "data": json.dumps({"status": st, "round": after})}
            if st in TERMINAL or await request.is_disconnected():
                return
            await asyncio.sleep(interval)

    return EventSourceResponse(stream(), ping=15)
