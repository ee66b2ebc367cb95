"""The API's operations as its middleware needs them: which methods a path takes, and which
of them read a request body.

Read from the OpenAPI paths of the app's schema routes, so `Allow` and the body checks cannot
disagree with the document. Those paths are built once a process: the routes under /api/v1
are shared by every app (api.main.v1_routes), and building the document costs about 0.5 s,
which every new app paid on its first request when each app built its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.routing import BaseRoute, Mount


def operations(app: FastAPI) -> Mapping[str, Mapping[str, bool]]:
    """Path template -> method (upper case) -> whether the operation takes a request body."""
    # What the document leaves out (the docs, their static files, the root probes) is new in
    # every app; what it lists is the /api/v1 routes every app shares.
    routes = tuple(
        r for r in app.routes if not isinstance(r, Mount) and getattr(r, "include_in_schema", True)
    )
    key = tuple(map(id, routes))  # FastAPI's included routers are unhashable dataclasses
    if key not in _BUILT:
        _BUILT[key] = (routes, _paths(routes))  # the routes are kept, so their ids stay theirs
    return _BUILT[key][1]


_BUILT: dict[tuple[int, ...], tuple[tuple[BaseRoute, ...], Mapping[str, Mapping[str, bool]]]] = {}


def _paths(routes: tuple[BaseRoute, ...]) -> Mapping[str, Mapping[str, bool]]:
    paths = get_openapi(title="operations", version="0", routes=list(routes)).get("paths", {})
    return {
        path: {method.upper(): "requestBody" in op for method, op in ops.items()}
        for path, ops in paths.items()
    }


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
