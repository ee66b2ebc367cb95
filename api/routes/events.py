"""Server-Sent Events: each landed round as a `round` event, status changes as `status`.

Also POST /runs/{id}/stream-token: a short-lived token a browser's EventSource (which cannot
send an Authorization header) passes as `?token=` to read that one run's stream.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request, status
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from api.db import is_unavailable
from api.deps import CredsDep, RunDep, SessionDep, StreamSessionDep, authenticate, parse_uuid
from api.errors import RETRY_AFTER_S
from api.models import Run
from api.repository import metrics as metrics_repo
from api.repository import runs as runs_repo
from api.repository import users as users_repo
from api.schemas import AUTHED, error_responses
from api.schemas_spec import StreamToken
from api.security import (
    STREAM_TOKEN_TTL_S,
    new_stream_token,
    parse_stream_token,
    stream_token_valid,
)
from fedgen.status import TERMINAL

router = APIRouter(tags=["events"])
MAX_ROUND = 2**31 - 1
RECONNECT_MS = 1000  # the `retry` a stream closed for FEDGEN_SSE_MAX_S asks of an EventSource
_UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}


def _poll(
    request: Request, run_id: uuid.UUID, after: int
) -> tuple[str | None, list[tuple[int, dict[str, Any]]]]:
    with request.app.state.sessionmaker() as s:
        st = runs_repo.status_of(s, run_id)
        rows = metrics_repo.round_history(s, [run_id], after)[run_id]
    return (st[0] if st else None), rows


def _check_stream_token(session: StreamSessionDep, token: str, run_id: uuid.UUID) -> None:
    """401 for a malformed, forged, expired or revoked stream token; 403 for another run's."""
    claim = parse_stream_token(token)
    api_token = users_repo.token_by_id(session, claim.token_id) if claim else None
    if claim is None or api_token is None or not stream_token_valid(claim, api_token.token_hash):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, "invalid or expired stream token", _UNAUTHORIZED
        )
    if claim.run_id != run_id:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this stream token is for another run")


def load_stream_run(
    run_id: str,
    request: Request,
    session: StreamSessionDep,
    creds: CredsDep,
    token: Annotated[
        str | None,
        Query(
            max_length=200,
            description="A stream token from POST /runs/{id}/stream-token, for clients that "
            "cannot send an Authorization header (a browser's EventSource).",
        ),
    ] = None,
) -> Run:
    """The run of the path, authenticated by bearer token or by `?token=` (a stream token)."""
    rid = parse_uuid(run_id)
    if token is not None and creds is None:
        _check_stream_token(session, token, rid)
    else:
        authenticate(request, session, creds)
    run = runs_repo.get_run(session, rid, in_trash=False)
    if run is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"run {run_id} not found")
    return run


@router.post("/runs/{run_id}/stream-token", responses=error_responses(*AUTHED, 404, 422))
def stream_token(run: RunDep, creds: CredsDep, session: SessionDep) -> StreamToken:
    """A token for `GET /runs/{id}/events?token=...`, valid for this run only, for 10 minutes.

    It is signed with the caller's API token (never stored), so revoking that API token
    revokes its stream tokens too.
    """
    assert creds is not None  # RunDep has authenticated the bearer token
    api_token = users_repo.token_row(session, creds.credentials)
    assert api_token is not None
    token, expires = new_stream_token(api_token.id, api_token.token_hash, run.id)
    return StreamToken(
        token=token, run_id=str(run.id), expires_at=expires, ttl_s=STREAM_TOKEN_TTL_S
    )


@router.get(
    "/runs/{run_id}/events",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": "Server-Sent Events: `round` (id = round) and `status` events",
            "content": {
                "text/event-stream": {
                    "schema": {
                        "type": "object",
                        "required": ["event", "data"],
                        "properties": {
                            "event": {"type": "string", "enum": ["round", "status"]},
                            "data": {"type": "string", "description": "JSON"},
                            "id": {"type": "string", "description": "the round"},
                        },
                    }
                }
            },
        },
        **error_responses(*AUTHED, 404, 422),
    },
)
async def run_events(
    run: Annotated[Run, Depends(load_stream_run)],
    request: Request,
    since_round: Annotated[
        int,
        Query(
            ge=-1,
            le=MAX_ROUND,
            description="Exclusive: only rounds > since_round are sent (-1, the default, sends "
            "every round from round 0). A client that already holds rounds 0..k passes k.",
        ),
    ] = -1,
    after_round: Annotated[
        int, Query(ge=-1, le=MAX_ROUND, description="Older name of since_round.")
    ] = -1,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """Stream rounds in order and status changes; the stream ends when the run is terminal,
    or after FEDGEN_SSE_MAX_S (default an hour) for a run that is not: then the last event
    is not a terminal `status`, and the client reconnects (EventSource does by itself, after
    the `retry` the stream ends with) to go on after the last round it got.

    `since_round` is exclusive: the first `round` event is the first round after it. A
    reconnecting EventSource sends `Last-Event-ID` (the last round it got), which counts
    the same way. Each `round` event's data is `{"round": r, "metrics": {...}}` with id `r`;
    each `status` event's data is `{"status": ..., "round": last round sent}`. Authenticate
    with a bearer token, or with `?token=` from POST /runs/{id}/stream-token.
    """
    run_id = run.id
    start = max(since_round, after_round)
    if last_event_id and last_event_id.isdigit() and len(last_event_id) < 10:
        start = max(start, int(last_event_id))
    interval: float = request.app.state.settings_sse_poll_s
    max_s: float = request.app.state.settings.sse_max_s

    return EventSourceResponse(_stream(request, run_id, start, interval, max_s), ping=15)


async def _stream(
    request: Request, run_id: uuid.UUID, start: int, interval: float, max_s: float
) -> AsyncIterator[dict[str, Any]]:
    """The events of one stream: rounds after `start` as they land, status changes, and the end
    (terminal status, deleted run, database gone, or open for `max_s`)."""
    after, last_status = start, None
    deadline = time.monotonic() + max_s
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
        left = deadline - time.monotonic()
        if left <= 0:
            yield {
                "comment": f"open for FEDGEN_SSE_MAX_S={max_s:g} s: reconnect to go on",
                "retry": RECONNECT_MS,
            }
            return
        await asyncio.sleep(min(interval, left))
