"""Error bodies: every 422 is {"detail": [{"loc", "msg", "type", "field"}]} (api.schemas.ValidationErrorBody); nothing malformed gives a 500."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from fedgen.spec import format_validation_error


class FieldErrors(Exception):
    """A 422 with (dotted field, message) pairs, e.g. from fedgen.spec.SpecError."""

    def __init__(self, errors: list[tuple[str, str]], prefix: str = "") -> None:
        self.errors = [
            (prefix + f if f != "(root)" else (prefix.rstrip(".") or f), m) for f, m in errors
        ]
        super().__init__("; ".join(f"{f}: {m}" for f, m in self.errors))


def field_detail(errors: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The JSON shape of field errors."""
    return [
        {"loc": ["body", *f.split(".")], "msg": f"{f}: {m}", "type": "value_error", "field": f}
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


def install(app: FastAPI) -> None:
    """Register the handlers on the app."""
    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(FieldErrors, _field_errors)
    app.add_exception_handler(ValidationError, _pydantic)
