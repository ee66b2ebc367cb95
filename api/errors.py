"""Error bodies: every 422 is {"detail": [{"loc", "msg", "type", "field"}]} (vocab.schemas.errors.ValidationErrorBody); nothing malformed gives a 500.

A database that cannot be reached (down, restarting, pool exhausted) is answered once, here,
for every route: 503 {"detail": "database unavailable (<error class>); retry later"} with
`Retry-After`, never a plain-text 500.

A JSON body that is not UTF-8 (RFC 8259; UTF-16 too), that nests arrays and objects deeper than
MAX_JSON_DEPTH, or that holds a NUL, a lone surrogate or an integer longer than Python reads
(api/input_text.py), is a 422 naming the problem (`JsonBodyCheck`), not FastAPI's plain 400
"There was an error parsing the body", a 500 from the database nor a RecursionError further on.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from sqlalchemy import exc as sa_exc

from api.input_text import body_value_problems
from api.operations import OperationTable
from fedgen.spec import format_validation_error
from lab.db import is_unavailable

log = logging.getLogger(__name__)

#: Seconds a client is asked to wait after a 503 (a database restart takes a few seconds).
RETRY_AFTER_S = 5
#: Arrays and objects nested deeper than this in a JSON body are refused (a sweep nests 5).
MAX_JSON_DEPTH = 32


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


def _query_names(route: Any) -> frozenset[str]:
    """The query parameters of a matched route, a query model's fields included."""
    names: set[str] = set()
    stack = [route.dependant] if isinstance(route, APIRoute) else []
    while stack:  # the route's own parameters and its dependencies'
        dependant = stack.pop()
        stack.extend(dependant.dependencies)
        for param in dependant.query_params:
            names.add(param.alias)
            model = param.field_info.annotation
            if isinstance(model, type) and issubclass(model, BaseModel):
                names.update(f.alias or n for n, f in model.model_fields.items())
    return frozenset(names)


def _in_query(req: Request, field: str) -> bool:
    """`field` (dotted) came from the query: it is one of the route's query parameters, or the
    request has no body to have come from."""
    route = req.scope.get("route")
    if route is not None:
        if id(route) not in _QUERY_NAMES:  # routes live as long as the process (v1_routes)
            _QUERY_NAMES[id(route)] = _query_names(route)
        if field.split(".")[0] in _QUERY_NAMES[id(route)]:
            return True
    return req.method in ("GET", "HEAD")


_QUERY_NAMES: dict[int, frozenset[str]] = {}


def _field_errors(req: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, FieldErrors)
    detail = field_detail(exc.errors)
    for item in detail:  # a query parameter's error says so in its loc, as FastAPI's own do
        if item["loc"][0] == "body" and _in_query(req, item["field"]):
            item["loc"][0] = "query"
    return JSONResponse({"detail": detail}, status_code=422)


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


def _too_deep(value: Any, limit: int) -> bool:
    """`value` nests arrays and objects more than `limit` deep (`[]` is 1 deep)."""
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def json_body_problems(body: bytes, max_depth: int = MAX_JSON_DEPTH) -> list[dict[str, Any]]:
    """The 422 items for a JSON body that is not UTF-8 (UTF-16 and UTF-32 included, which
    json.loads would read), nests deeper than `max_depth`, or holds a string the lab cannot
    store or an overlong integer (api/input_text.py); empty otherwise (a body that is malformed
    in another way is left to FastAPI's own 422)."""
    encoding = json.detect_encoding(body)  # what json.loads, and so FastAPI, would decode with
    if encoding not in ("utf-8", "utf-8-sig"):
        name = encoding.upper()
        return [
            {
                "loc": ["body"],
                "msg": f"(body): the body is {name} (by its first bytes); a JSON body must be "
                "UTF-8",
                "type": "json_invalid",
                "field": "(body)",
            }
        ]
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        return [
            {
                "loc": ["body", str(exc.start)],
                "msg": f"(body): malformed JSON: invalid UTF-8 at byte {exc.start} ({exc.reason}); "
                "a JSON body must be UTF-8",
                "type": "json_invalid",
                "field": "(body)",
            }
        ]
    if text.count("[") + text.count("{") <= max_depth:
        return body_value_problems(text)  # cannot nest deeper: no need to parse it for that
    try:
        too_deep = _too_deep(json.loads(text), max_depth)
    except RecursionError:
        too_deep = True
    except ValueError:
        too_deep = False  # malformed, or an overlong integer: body_value_problems says which
    if not too_deep:
        return body_value_problems(text)
    return [
        {
            "loc": ["body"],
            "msg": f"(body): JSON nested deeper than {max_depth} levels of arrays and objects "
            "(the limit)",
            "type": "value_error",
            "field": "(body)",
        }
    ]


def _is_json(content_type: str | None) -> bool:
    """FastAPI reads the body as JSON: no content type, application/json or application/*+json."""
    media = (content_type or "").split(";")[0].strip().lower()
    return media in ("", "application/json") or (
        media.startswith("application/") and media.endswith("+json")
    )


class JsonBodyCheck:
    """422 for a JSON body that is not UTF-8, nests deeper than MAX_JSON_DEPTH, or holds a
    string the lab cannot store or an overlong integer (`json_body_problems`).

    Only for the operations the OpenAPI document gives a request body (api.operations), so a
    404, a 405 or a route that takes no body answers as before; a pure ASGI middleware that
    reads the body (already bounded by BodyLimit) and passes it on unchanged.
    """

    def __init__(self, app: Any, table: Callable[[], OperationTable]) -> None:
        self.app = app
        self._table = table

    def takes_body(self, method: str, path: str) -> bool:
        return self._table().takes_body(method, path)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        ctype = next(
            (v.decode("latin-1") for k, v in scope["headers"] if k == b"content-type"), None
        )
        if not _is_json(ctype) or not self.takes_body(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        body = b"".join(chunks)
        problems = json_body_problems(body) if body else []
        if problems:
            await JSONResponse({"detail": problems}, status_code=422)(scope, receive, send)
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            message: dict[str, Any] = await receive()
            return message

        await self.app(scope, replay, send)


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
