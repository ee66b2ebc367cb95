"""GET /ready (and /api/v1/ready): whether the database and the broker answer, and to whom why.

The probe is public (load balancers and compose healthchecks send no token), so without a
valid bearer token it says only `{"status": "ok"}` or 503 `{"status": "unavailable"}`: an error
text names internal hosts, ports and drivers, which a stranger must not learn. A lab member's
valid token (any member) gets the detail as well: which of the two is down and its error's
first line, any password in a URL there replaced by `***`. A token presented here is checked
like any other (a wrong one counts toward FEDGEN_AUTH_FAIL_RATE), so the probe is no way to
try tokens for free.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import HTTPException, Request, status
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials
from sqlalchemy import text

from api.deps import authenticate_token
from api.errors import RETRY_AFTER_S

READY_SCHEMA = {
    "type": "object",
    "required": ["status"],
    "properties": {
        "status": {"type": "string", "enum": ["ok", "unavailable"]},
        "database": {
            "type": "string",
            "description": "ok, or the error (only with a valid bearer token)",
        },
        "broker": {
            "type": "string",
            "description": "ok, or the error (only with a valid bearer token)",
        },
        "detail": {
            "type": "string",
            "description": "which is unavailable (only with a valid bearer token)",
        },
    },
}
READY_DESCRIPTION = (
    'The database and the broker are reachable: 200 `{"status": "ok"}`, else 503 '
    '`{"status": "unavailable"}`. Public; only a request with a lab member\'s valid bearer '
    "token also gets `database`, `broker` (ok, or the error, passwords hidden) and `detail`."
)
_PASSWORD = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")


def hide_passwords(message: str) -> str:
    """`message` with the password of every URL in it (`scheme://user:secret@host`) as ***."""
    return _PASSWORD.sub(r"\1***@", message)


def _why(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    said = f"error: {type(exc).__name__}: {first}" if first else f"error: {type(exc).__name__}"
    return hide_passwords(said)[:200]


def _checks(request: Request) -> dict[str, str]:
    """'ok' or the error of the database and of the broker."""
    checks: dict[str, str] = {}
    try:
        with request.app.state.sessionmaker() as s:
            s.execute(text("SELECT 1"))
        checks["database"] = "ok"
    except Exception as exc:  # any failure means not ready
        checks["database"] = _why(exc)
    try:
        request.app.state.broker_check()
        checks["broker"] = "ok"
    except Exception as exc:
        checks["broker"] = _why(exc)
    return checks


def _is_member(request: Request, database_ok: bool) -> bool:
    """True when the request carries a valid bearer token (checked only if one was sent and
    the database answers: without it no token can be checked)."""
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not presented.strip() or not database_ok:
        return False
    creds = HTTPAuthorizationCredentials(scheme="Bearer", credentials=presented.strip())
    try:
        with request.app.state.sessionmaker() as s:
            authenticate_token(request, s, creds)
    except HTTPException:  # 401, or 429 over the failure budget: a stranger
        return False
    except Exception:  # noqa: BLE001 - the database went away meanwhile: no detail
        return False
    return True


def ready(request: Request) -> JSONResponse:
    """The readiness answer (see the module docstring)."""
    checks = _checks(request)
    ok = all(v == "ok" for v in checks.values())
    body: dict[str, Any] = {"status": "ok" if ok else "unavailable"}
    if _is_member(request, checks["database"] == "ok"):
        body.update(checks)
        if not ok:
            down = [k for k, v in checks.items() if v != "ok"]
            body["detail"] = f"{' and '.join(down)} unavailable"
    if ok:
        return JSONResponse(body)
    return JSONResponse(
        body,
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )
