"""The floors of the code base, read from the sources (every import, late ones included):
fedgen/ at the bottom, lab/ on it, api/ and worker/ as peers on lab/, the dashboard beside them
speaking HTTP and reading only api.schemas; no import runs back up and no package cycle."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fedgen", "lab", "api", "worker", "dashboard", "migrations")
SERVER_LIBRARIES = ("fastapi", "starlette", "sqlalchemy", "alembic", "celery", "kombu", "streamlit")


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(node: ast.ImportFrom, package: list[str]) -> list[str]:
    """The modules a `from ... import ...` inside `package` loads: `from pkg import sub` counts
    as pkg.sub where that is a module of ours, else as pkg; relative ones are resolved."""
    base = package[: len(package) - node.level + 1] if node.level else []
    module = ".".join([*base, node.module] if node.module else base)
    return [f"{module}.{a.name}" if _is_ours(f"{module}.{a.name}") else module for a in node.names]


def _imports(path: Path) -> Iterator[str]:
    """Every module `path` imports, at any depth (functions included)."""
    package = _module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield from _resolve(node, package)


def _is_ours(module: str) -> bool:
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _sources(package: str) -> list[Path]:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, package  # the walk found the package
    return files


def _under(module: str, roots: tuple[str, ...]) -> bool:
    return any(module == r or module.startswith(r + ".") for r in roots)


def _offenders(
    package: str, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()
) -> list[str]:
    return sorted(
        {
            f"{f.relative_to(ROOT)}: {m}"
            for f in _sources(package)
            for m in _imports(f)
            if _under(m, forbidden) and not _under(m, allowed)
        }
    )


@pytest.mark.parametrize(
    ("source", "package", "modules"),
    [
        ("from .runs import create_run", ["lab", "repository"], ["lab.repository.runs"]),
        ("from .. import db", ["lab", "repository"], ["lab.db"]),
        ("from api import schemas", ["dashboard"], ["api.schemas"]),
        ("from api.schemas.runs import RunPublic", ["dashboard"], ["api.schemas.runs"]),
        ("from fastapi import FastAPI", ["api"], ["fastapi"]),
    ],
)
def test_imports_resolve_to_modules(source: str, package: list[str], modules: list[str]) -> None:
    """The walk reads `from` imports as the modules they load (the rules below rely on it)."""
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _resolve(node, package) == modules


def test_fedgen_imports_no_server_code() -> None:
    """fedgen/ (the library a researcher installs) imports no lab, HTTP, database or UI code."""
    assert _offenders("fedgen", ("lab", "api", "worker", "dashboard", *SERVER_LIBRARIES)) == []


def test_lab_imports_neither_api_nor_worker_nor_dashboard() -> None:
    """lab/ (the lab's state) sits below both doors: api/ and worker/ import it, never back."""
    assert _offenders("lab", ("api", "worker", "dashboard", "streamlit")) == []


def test_worker_imports_neither_api_nor_dashboard() -> None:
    """worker/ reaches the lab's state through lab/, not through the HTTP door."""
    assert _offenders("worker", ("api", "dashboard", "fastapi", "starlette", "streamlit")) == []


def test_api_imports_neither_worker_nor_dashboard() -> None:
    assert _offenders("api", ("worker", "dashboard", "celery", "streamlit")) == []


def test_dashboard_reads_the_api_only_through_its_schemas() -> None:
    """The dashboard talks HTTP; of api/ it imports only the response models (api.schemas.*)."""
    forbidden = ("lab", "worker", "api", "fastapi", "starlette", "sqlalchemy", "celery")
    assert _offenders("dashboard", forbidden, allowed=("api.schemas",)) == []


def test_api_schemas_import_no_server_code() -> None:
    """api/schemas/ is shared with the dashboard: pydantic, fedgen and each other only."""
    forbidden = ("lab", "worker", "dashboard", "api", *SERVER_LIBRARIES)
    files = _sources("api/schemas")
    bad = sorted(
        {
            f"{f.relative_to(ROOT)}: {m}"
            for f in files
            for m in _imports(f)
            if _under(m, forbidden) and not _under(m, ("api.schemas",))
        }
    )
    assert bad == []


def test_migrations_import_neither_api_nor_worker() -> None:
    assert _offenders("migrations", ("api", "worker", "dashboard")) == []


def _package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {p: set() for p in PACKAGES}
    for package in PACKAGES:
        for f in _sources(package):
            for m in _imports(f):
                top = m.split(".")[0]
                if top in PACKAGES and top != package:
                    graph[package].add(top)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of `graph` as a path (first node repeated at the end), or []."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str]:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], node, nxt] if nxt in path else [node, nxt]
            if nxt not in state and (found := visit(nxt, [*path, node])):
                return found
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start, [])):
            return found
    return []


def test_no_package_cycle() -> None:
    """The packages' import graph is acyclic (fedgen -> lab -> api | worker, migrations -> lab)."""
    assert _cycle(_package_graph()) == []


@pytest.mark.parametrize(
    ("graph", "cyclic"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, False),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True),
        ({"a": {"a"}}, True),
        ({"a": {"b", "c"}, "b": {"c"}, "c": set()}, False),
    ],
)
def test_the_cycle_finder_finds_cycles(graph: dict[str, set[str]], cyclic: bool) -> None:
    assert bool(_cycle(graph)) is cyclic
