"""Error bodies (every error the API sends has one of two shapes) and the `responses=` of a
route that can answer them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorBody(BaseModel):
    """400, 401, 403, 404, 405, 409, 410, 413, 429, 503: a message."""

    detail: str


class FieldError(BaseModel):
    """One invalid field: where, a message naming the field and the limit, and the error kind."""

    loc: list[str | int] = Field(description='e.g. ["body", "spec", "rounds"]')
    msg: str
    type: str = Field(description="pydantic's error type, or value_error for cross-field rules")
    field: str = Field(description="dotted field name, e.g. spec.rounds")


class ValidationErrorBody(BaseModel):
    """422: one entry per invalid field."""

    detail: list[FieldError]


_RETRY_AFTER = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}}


_ERROR_TEXT: dict[int, str] = {
    400: "The body is not JSON",
    401: "Missing or invalid bearer token",
    403: "Only the run's owner or an admin may do this",
    404: "Not found",
    409: "Conflict with the resource's state",
    410: "Gone",
    413: "Request body over FEDGEN_MAX_BODY_BYTES",
    422: "Invalid fields (one entry per field)",
    429: "Rate limit: FEDGEN_SUBMIT_RATE per token, FEDGEN_AUTH_FAIL_RATE per address and "
    "presented token (failures only, stream tokens' too), FEDGEN_MAX_STREAMS_PER_TOKEN and "
    "FEDGEN_MAX_STREAMS_PER_USER open event streams; submissions: "
    "FEDGEN_MAX_QUEUED_RUNS_PER_MEMBER queued runs; new tokens: FEDGEN_MAX_TOKENS_PER_USER",
    503: "The database is unavailable",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route that can answer these error codes (bodies as sent)."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        entry: dict[str, Any] = {
            "model": ValidationErrorBody if code == 422 else ErrorBody,
            "description": _ERROR_TEXT[code],
        }
        if code in (429, 503):
            entry["headers"] = _RETRY_AFTER
        if code == 401:
            entry["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}}}
        out[code] = entry
    return out


# What any authenticated route may answer; routes add their own (404, 403, 422, 413...).
AUTHED = (401, 429, 503)

BODY = (400, 413, 422)
