"""What every request's strings and numbers must be, checked once before any route: no NUL and
no lone surrogate (lab/storable_text.py) in any string of a JSON body (keys included) or of the
query, and no integer in a body longer than Python reads (`MAX_INT_DIGITS`). Each is a 422
naming the field (`body.…` or `query.…`), never a 500 from the database or the JSON encoder nor
FastAPI's plain 400.

The body's strings are checked by `errors.JsonBodyCheck` (which reads the body already) with
`body_value_problems`; the query's by the `QueryTextCheck` middleware. A `where` value, JSON
inside a query string, is checked where it is decoded (lab/repository/spec_filter.py).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.responses import JSONResponse

from lab.storable_text import bad_strings, shown, text_problem

#: The most digits an integer in a JSON body may have (Python's own limit on reading one).
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300
# What a body must contain for the slow check to find anything: an escaped NUL or surrogate
# (a UTF-8 body holds neither raw: a raw NUL is malformed JSON, a surrogate malformed UTF-8)
# or a run of digits longer than MAX_INT_DIGITS.
_SUSPECT = re.compile(r"\\u(?:0000|[dD][89a-fA-F])|[0-9]{" + str(MAX_INT_DIGITS + 1) + ",}")


@dataclass(frozen=True)
class _LongInt:
    digits: int


def _read_int(text: str) -> int | _LongInt:
    digits = len(text.lstrip("-"))
    return _LongInt(digits) if digits > MAX_INT_DIGITS else int(text)


def _long_ints(value: Any) -> Iterator[tuple[tuple[str, ...], int]]:
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while stack:
        node, where = stack.pop()
        if isinstance(node, _LongInt):
            yield where, node.digits
        elif isinstance(node, dict):
            stack.extend((child, (*where, shown(k))) for k, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, (*where, str(i))) for i, child in enumerate(node))


def entry(location: str, path: tuple[str, ...], problem: str) -> dict[str, Any]:
    """One item of a 422's `detail` for the field at `path` under `location` (body, query)."""
    field = ".".join(path) or f"({location})"
    return {
        "loc": [location, *path],
        "msg": f"{field}: {problem}",
        "type": "value_error",
        "field": field,
    }


def body_value_problems(text: str) -> list[dict[str, Any]]:
    """The 422 items for a JSON body's unstorable strings and overlong integers (none for a
    malformed body: FastAPI's own 422 names that)."""
    if _SUSPECT.search(text) is None:
        return []  # nothing to find: the common case parses nothing here
    try:
        value = json.loads(text, parse_int=_read_int)
    except (ValueError, RecursionError):
        return []
    out = [entry("body", path, problem) for path, problem in bad_strings(value)]
    out += [
        entry("body", path, f"an integer of {n} digits; at most {MAX_INT_DIGITS} digits")
        for path, n in _long_ints(value)
    ]
    return sorted(out, key=lambda e: e["field"])


def query_problems(query_string: bytes) -> list[dict[str, Any]]:
    """The 422 items for query parameters (names or values) that hold NUL or a surrogate;
    the query is split as Starlette splits it."""
    out = []
    for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        problem = text_problem(name)
        if problem is not None:
            out.append(entry("query", (shown(name),), f"the parameter's name {problem}"))
            continue
        problem = text_problem(value)
        if problem is not None:
            out.append(entry("query", (name,), problem))
    return out


class QueryTextCheck:
    """422 for a request whose query holds NUL or a lone surrogate (`query_problems`)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("query_string"):
            problems = query_problems(scope["query_string"])
            if problems:
                await JSONResponse({"detail": problems}, status_code=422)(scope, receive, send)
                return
        await self.app(scope, receive, send)
