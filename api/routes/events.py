"""Server-Sent Events: each landed round as a `round` event, status changes as `status`.

Also POST /runs/{id}/stream-token: a short-lived token a browser's EventSource (which cannot
send an Authorization header) passes as `?token=` to read that one run's stream.

A stream counts against FEDGEN_MAX_STREAMS_PER_TOKEN for the API token it was opened with (a
stream token's for the API token that minted it) and against FEDGEN_MAX_STREAMS_PER_USER for
that token's member, and ends within TOKEN_RECHECK_S once that API token is revoked or expires.
A stream token that fails (malformed, forged, expired) counts against the same failure budget
as a bad bearer token (FEDGEN_AUTH_FAIL_RATE: 429 beyond).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request, status
from sse_starlette.sse import EventSourceResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from api.client_address import client_address
from api.deps import (
    CredsDep,
    RunDep,
    SessionDep,
    authenticate_token,
    parse_uuid,
)
from api.errors import RETRY_AFTER_S
from api.limits import Limits
from lab.db import is_unavailable
from lab.models import Run
from lab.repository import metrics as metrics_repo
from lab.repository import runs as runs_repo
from lab.repository import tokens as tokens_repo
from lab.security import (
    STREAM_TOKEN_TTL_S,
    new_stream_token,
    parse_stream_token,
    stream_token_valid,
)
from vocab.run_status import TERMINAL
from vocab.schemas.errors import AUTHED, error_responses
from vocab.schemas.runs import STREAM_RUN_GONE, StreamToken

router = APIRouter(tags=["events"])
MAX_ROUND = 2**31 - 1
RECONNECT_MS = 1000  # the `retry` a stream closed for FEDGEN_SSE_MAX_S asks of an EventSource
_UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}
TOKEN_RECHECK_S = 2.0  # how often an open stream asks whether its API token still authenticates


@dataclass(frozen=True)
class StreamAuth:
    """The run of the path, the API token the stream is opened with (or minted from) and that
    token's member."""

    run: Run
    token_id: uuid.UUID
    user_id: uuid.UUID


@dataclass(frozen=True)
class _Polled:
    status: str | None
    rows: list[tuple[int, dict[str, Any]]]
    token_ok: bool


def _poll(request: Request, run_id: uuid.UUID, after: int, token_id: uuid.UUID | None) -> _Polled:
    """The run's status and rounds after `after`; with `token_id`, whether it still holds."""
    with request.app.state.sessionmaker() as s:
        st = runs_repo.status_of(s, run_id)
        rows = metrics_repo.round_history(s, [run_id], after)[run_id]
        ok = token_id is None or tokens_repo.still_valid(s, token_id)
    return _Polled(st[0] if st else None, rows, ok)


def _check_stream_token(
    request: Request, session: SessionDep, token: str, run_id: uuid.UUID
) -> tuple[uuid.UUID, uuid.UUID]:
    """The API token a stream token was minted from and its member; 401 for a malformed, forged
    or expired stream token or one whose API token is revoked or expired, counted as a failed
    authentication (429 over FEDGEN_AUTH_FAIL_RATE, as for bearer tokens); 403 for another
    run's."""
    claim = parse_stream_token(token)
    api_token = tokens_repo.get_token(session, claim.token_id) if claim else None
    if (
        claim is None
        or api_token is None
        or tokens_repo.refusal(api_token) is not None
        or not stream_token_valid(claim, api_token.token_hash)
    ):
        limits: Limits = request.app.state.limits
        limits.auth_failed(
            client_address(request, request.app.state.settings.trusted_proxies), token
        )
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, "invalid or expired stream token", _UNAUTHORIZED
        )
    if claim.run_id != run_id:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this stream token is for another run")
    return api_token.id, api_token.user_id


def load_stream_run(
    run_id: str,
    request: Request,
    session: SessionDep,
    creds: CredsDep,
    token: Annotated[
        str | None,
        Query(
            max_length=200,
            description="A stream token from POST /runs/{id}/stream-token, for clients that "
            "cannot send an Authorization header (a browser's EventSource).",
        ),
    ] = None,
) -> StreamAuth:
    """The run of the path, authenticated by bearer token or by `?token=` (a stream token)."""
    rid = parse_uuid(run_id)
    if token is not None and creds is None:
        token_id, user_id = _check_stream_token(request, session, token, rid)
    else:
        api_token, user = authenticate_token(request, session, creds)
        token_id, user_id = api_token.id, user.id
    run = runs_repo.get_run(session, rid, in_trash=False)
    if run is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"run {run_id} not found")
    return StreamAuth(run, token_id, user_id)


@router.post("/runs/{run_id}/stream-token", responses=error_responses(*AUTHED, 404, 422))
def stream_token(run: RunDep, creds: CredsDep, session: SessionDep) -> StreamToken:
    """A token for `GET /runs/{id}/events?token=...`, valid for this run only, for 10 minutes.

    It is signed with the caller's API token (never stored), so revoking that API token
    revokes its stream tokens too.
    """
    assert creds is not None  # RunDep has authenticated the bearer token
    found = tokens_repo.find(session, creds.credentials)
    assert found is not None
    api_token = found[0]
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
    auth: Annotated[StreamAuth, Depends(load_stream_run)],
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

    At most FEDGEN_MAX_STREAMS_PER_TOKEN streams per API token and FEDGEN_MAX_STREAMS_PER_USER
    per member (over all their tokens) are open at once (429 beyond); a stream whose API token
    is revoked or expires ends with an `error` event.
    """
    run_id = auth.run.id
    start = max(since_round, after_round)
    if last_event_id and last_event_id.isdigit() and len(last_event_id) < 10:
        start = max(start, int(last_event_id))
    interval: float = request.app.state.settings_sse_poll_s
    max_s: float = request.app.state.settings.sse_max_s
    limits: Limits = request.app.state.limits
    settings = request.app.state.settings
    slot = limits.streams.acquire(
        auth.token_id.hex,
        settings.max_streams_per_token,
        auth.user_id.hex,
        settings.max_streams_per_user,
    )

    async def events() -> AsyncIterator[dict[str, Any]]:
        try:
            async for event in _stream(request, run_id, start, interval, max_s, auth.token_id):
                yield event
        finally:
            slot.release()

    # The background task releases the slot too when the generator never ran (HEAD).
    return EventSourceResponse(events(), ping=15, background=BackgroundTask(slot.release))


def _unavailable(exc: Exception) -> dict[str, Any]:
    """The last event of a stream whose database went away."""
    # Headers are sent: say so in the stream, ask the client to reconnect later
    # (EventSource honours `retry`, and Last-Event-ID resumes after the last round).
    return {
        "event": "error",
        "retry": RETRY_AFTER_S * 1000,
        "data": json.dumps({"detail": f"database unavailable ({type(exc).__name__}); retry later"}),
    }


async def _stream(
    request: Request,
    run_id: uuid.UUID,
    start: int,
    interval: float,
    max_s: float,
    token_id: uuid.UUID,
) -> AsyncIterator[dict[str, Any]]:
    """The events of one stream: rounds after `start` as they land, status changes, and the end
    (terminal status, deleted run, database gone, API token revoked, or open for `max_s`)."""
    after, last_status = start, None
    deadline = time.monotonic() + max_s
    recheck_at = time.monotonic() + TOKEN_RECHECK_S
    while True:
        due = time.monotonic() >= recheck_at
        try:
            polled = await run_in_threadpool(
                _poll, request, run_id, after, token_id if due else None
            )
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            yield _unavailable(exc)
            return
        if due:
            recheck_at = time.monotonic() + TOKEN_RECHECK_S
        if not polled.token_ok:
            detail = "the API token of this stream was revoked or has expired"
            yield {"event": "error", "data": json.dumps({"detail": detail})}
            return
        st = polled.status
        if st is None:
            yield {"event": "status", "data": json.dumps({"status": STREAM_RUN_GONE})}
            return
        for rnd, met in polled.rows:
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
