"""The API's operations as its middleware needs them: which methods a path takes, and which
of them read a request body.

Read from the paths of the app's OpenAPI document (api.openapi.route_document, built once a
process for the routes every app shares), so `Allow` and the body checks cannot disagree with
the document.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI

from api.openapi import route_document


def operations(app: FastAPI) -> Mapping[str, Mapping[str, bool]]:
    """Path template -> method (upper case) -> whether the operation takes a request body."""
    global _last
    doc = route_document(app)  # one a process for the routes every app shares
    if _last is None or _last[0] is not doc:
        paths: dict[str, dict[str, Any]] = doc.get("paths", {})
        table = {
            path: {method.upper(): "requestBody" in op for method, op in ops.items()}
            for path, ops in paths.items()
        }
        _last = (doc, table)
    return _last[1]


_last: tuple[dict[str, Any], Mapping[str, Mapping[str, bool]]] | None = None  # the latest table


def _pattern(template: str) -> re.Pattern[str]:
    """A path template ('/api/v1/runs/{run_id}') as a regex matching its paths."""
    return re.compile("^" + re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(template)) + "$")


@dataclass(frozen=True)
class OperationTable:
    """The operations of one app, matched by path; built on its first request."""

    entries: tuple[tuple[re.Pattern[str], Mapping[str, bool]], ...]

    @classmethod
    def of(cls, app: FastAPI) -> OperationTable:
        return cls(tuple((_pattern(t), ops) for t, ops in operations(app).items()))

    def allowed(self, path: str) -> list[str]:
        """The methods of the first template matching `path`, with OPTIONS; [] when none."""
        for pattern, ops in self.entries:
            if pattern.match(path):
                return sorted(set(ops) | {"OPTIONS"})
        return []

    def takes_body(self, method: str, path: str) -> bool:
        """Whether any operation `method` on `path` reads a request body."""
        return any(ops.get(method, False) and p.match(path) for p, ops in self.entries)
