"""Error bodies: every 422 is {"detail": [{"loc", "msg", "type", "field"}]} (api.schemas.ValidationErrorBody); nothing malformed gives a 500.

A database that cannot be reached (down, restarting, pool exhausted) is answered once, here,
for every route: 503 {"detail": "database unavailable (<error class>); retry later"} with
`Retry-After`, never a plain-text 500.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from sqlalchemy import exc as sa_exc

from api.db import is_unavailable
from fedgen.spec import format_validation_error

log = logging.getLogger(__name__)

#: Seconds a client is asked to wait after a 503 (a database restart takes a few seconds).
RETRY_AFTER_S = 5


class FieldErrors(Exception):
    """A 422 with (dotted field, message) pairs, e.g. from fedgen.spec.SpecError."""

    def __init__(self, errors: list[tuple[str, str]], prefix: str = "") -> None:
        self.errors = [
            (prefix + f if f != "(root)" else (prefix.rstrip(".") or f), m) for f, m in errors
        ]
        super().__init__("; ".join(f"{f}: {m}" for f, m in self.errors))


_GRID = re.compile(r"^grid\.(?P<key>[^\[]+)(?P<idx>(?:\[\d+\])+)(?P<rest>(?:\..*)?)$")


def field_loc(field: str) -> list[str | int]:
    """The loc of a dotted field; a sweep's `grid.<dotted key>[i]...` keeps its key whole."""
    m = _GRID.match(field)
    if m is None:
        return ["body", *field.split(".")]
    idx = [int(i) for i in re.findall(r"\d+", m["idx"])]
    rest = m["rest"][1:].split(".") if m["rest"] else []
    return ["body", "grid", m["key"], *idx, *rest]


def field_detail(errors: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The JSON shape of field errors."""
    return [
        {"loc": field_loc(f), "msg": f"{f}: {m}", "type": "value_error", "field": f}
        for f, m in errors
    ]


def _request_validation(_req: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    out: list[dict[str, Any]] = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        field = (
            ".".join(loc[1:] if loc and loc[0] in ("body", "query", "path") else loc) or "(body)"
        )
        msg = str(err.get("msg", "invalid"))
        if err.get("type") == "extra_forbidden":
            msg = "unknown field"
        elif err.get("type") == "json_invalid":
            # loc holds the character offset of the error, not a field.
            where = loc[1] if len(loc) > 1 else "?"
            field = "(body)"
            msg = f"malformed JSON at character {where}: {err.get('ctx', {}).get('error', msg)}"
        elif "input" in err and err.get("type") != "missing":
            shown = repr(err["input"])
            msg = f"{msg} (got {shown[:77] + '...' if len(shown) > 80 else shown})"
        kind = str(err.get("type", "value_error"))
        out.append({"loc": loc, "msg": f"{field}: {msg}", "type": kind, "field": field})
    return JSONResponse({"detail": out}, status_code=422)


def _field_errors(_req: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, FieldErrors)
    return JSONResponse({"detail": field_detail(exc.errors)}, status_code=422)


def _pydantic(_req: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ValidationError)
    return JSONResponse({"detail": field_detail(format_validation_error(exc))}, status_code=422)


def unavailable_response(exc: BaseException, what: str = "database") -> JSONResponse:
    """503 with the error body and Retry-After: `what` cannot be reached now."""
    return JSONResponse(
        {"detail": f"{what} unavailable ({type(exc).__name__}); retry later"},
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


def _database(_req: Request, exc: Exception) -> JSONResponse:
    if is_unavailable(exc):
        log.warning("database unavailable: %s", str(exc).splitlines()[0] if str(exc) else exc)
        return unavailable_response(exc)
    # Any other database error is a bug; answer it in the error body schema, not plain text.
    log.error("database error", exc_info=exc)
    return JSONResponse({"detail": "internal server error"}, status_code=500)


def install(app: FastAPI) -> None:
    """Register the handlers on the app."""
    app.add_exception_handler(sa_exc.DBAPIError, _database)
    app.add_exception_handler(sa_exc.TimeoutError, _database)
    app.add_exception_handler(sa_exc.DisconnectionError, _database)
    try:
        import psycopg

        app.add_exception_handler(psycopg.OperationalError, _database)
    except ImportError:  # pragma: no cover - SQLite-only installs
        pass
    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(FieldErrors, _field_errors)
    app.add_exception_handler(ValidationError, _pydantic)
