"""The floors of the code base, read from the sources (every import, late ones included):
fedgen/ at the bottom (the library a researcher installs alone), vocab/ on it (the lab's shared
vocabulary: the wire models, run statuses, webhook events, footprint arithmetic), lab/ on both,
api/ and worker/ as peers on lab/, the dashboard beside them speaking HTTP through the public
client (fedgen_lab), both reading vocab/ but no server package, and admin/ (the `fedgen-lab`
command) on top of api/ and worker/; no import runs back up (fedgen imports no vocab), no
package cycle, no module cycle inside a package, every fedgen module is one the library
runs (reachable from fedgen.runner or the `fedgen` command) or a plugin it declares; and no
product module hands on a name it did not define (every name is imported from its home)."""

from __future__ import annotations

import ast
import json
import re
import sys
import tomllib
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from fedgen.versions import PACKAGES  # every package the project ships: all of them walked

ROOT = Path(__file__).resolve().parents[1]
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


@cache
def _tree(path: Path) -> ast.Module:
    """`path` parsed once a session: the rules below walk the same files many times."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@cache
def _parsed(source: str) -> ast.Module:
    """`source` parsed once a session (a file's code is read by several rules)."""
    return ast.parse(source)


@cache
def _nodes(tree: ast.AST) -> tuple[ast.AST, ...]:
    """Every node of a cached `tree`, as `ast.walk` yields them, listed once a session: the
    walks, not the parsing, were most of these rules' time."""
    return tuple(ast.walk(tree))


@cache
def _imports(path: Path) -> tuple[str, ...]:
    """Every module `path` imports, at any depth (functions included)."""
    package = _module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    return tuple(_imports_in(_tree(path), package))


def _imports_in(tree: ast.AST, package: list[str]) -> Iterator[str]:
    for node in _nodes(tree):
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
        ("from vocab import schemas", ["dashboard"], ["vocab.schemas"]),
        ("from vocab.schemas.runs import RunPublic", ["dashboard"], ["vocab.schemas.runs"]),
        ("from fastapi import FastAPI", ["api"], ["fastapi"]),
    ],
)
def test_imports_resolve_to_modules(source: str, package: list[str], modules: list[str]) -> None:
    """The walk reads `from` imports as the modules they load (the rules below rely on it)."""
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _resolve(node, package) == modules


# What fedgen/ may not import: the lab's vocabulary and the server's packages and libraries.
FEDGEN_FORBIDDEN = ("vocab", "lab", "api", "worker", "dashboard", *SERVER_LIBRARIES)


def test_fedgen_imports_no_server_code() -> None:
    """fedgen/ (the library a researcher installs alone) imports no lab vocabulary (vocab/) and
    no lab, HTTP, database or UI code."""
    assert _offenders("fedgen", FEDGEN_FORBIDDEN) == []


@pytest.mark.parametrize(
    "source",
    [
        "from vocab.run_status import RunStatus",
        "import vocab.footprint",
        "def f():\n    from vocab import schemas",
        "from lab.config import Settings",
    ],
    ids=["fedgen importing server vocabulary", "plain import", "late import", "lab"],
)
def test_fedgen_importing_server_vocabulary_breaks_the_rule(source: str) -> None:
    """The rule above fails a fedgen module that imports vocab/ (or lab/), at any depth."""
    found = [
        m
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for m in (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else _resolve(node, ["fedgen"])
        )
    ]
    assert found
    assert all(_under(m, FEDGEN_FORBIDDEN) for m in found)


# Besides fedgen and itself, vocab/ loads pydantic and the standard library only. An import
# under `if TYPE_CHECKING:` loads nothing at run time (vocab/safe_csv.py names pandas' DataFrame
# for the type of the dashboard's tables).
VOCAB_LIBRARIES = ("pydantic",)


def _runtime_imports(path: Path) -> Iterator[str]:
    """The top-level names of what `path` imports at run time (absolute imports, any depth, the
    `if TYPE_CHECKING:` blocks left out)."""
    tree = _tree(path)
    typing_only = {
        id(inner)
        for node in _nodes(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    for node in _nodes(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module.split(".")[0]


def test_vocab_imports_only_fedgen_itself_pydantic_and_the_standard_library() -> None:
    """vocab/ (the lab's shared vocabulary: the wire models, run statuses, webhook events, the
    footprint) sits on fedgen/ and below every server package and client: no lab, api, worker,
    dashboard or fedgen_lab code, no FastAPI, SQLAlchemy, Celery or Streamlit."""
    forbidden = tuple(p for p in PACKAGES if p not in ("fedgen", "vocab")) + SERVER_LIBRARIES
    assert _offenders("vocab", forbidden) == []
    allowed = {"fedgen", "vocab", *VOCAB_LIBRARIES, *sys.stdlib_module_names}
    libraries = sorted(
        {
            f"{f.relative_to(ROOT)}: {m}"
            for f in _sources("vocab")
            for m in _runtime_imports(f)
            if m not in allowed
        }
    )
    assert libraries == []


def test_lab_imports_neither_api_nor_worker_nor_dashboard() -> None:
    """lab/ (the lab's state) sits below both doors: api/ and worker/ import it, never back."""
    assert _offenders("lab", ("api", "worker", "dashboard", "streamlit")) == []


def test_worker_imports_neither_api_nor_dashboard() -> None:
    """worker/ reaches the lab's state through lab/, not through the HTTP door."""
    assert _offenders("worker", ("api", "dashboard", "fastapi", "starlette", "streamlit")) == []


def test_api_imports_neither_worker_nor_dashboard() -> None:
    assert _offenders("api", ("worker", "dashboard", "celery", "streamlit")) == []


def test_dashboard_imports_no_server_package() -> None:
    """The dashboard talks HTTP: it reads the answers into the wire models (vocab.schemas.*) and
    imports no api/, lab/ or worker/ code (no allowance: the models are not api/'s)."""
    servers = tuple(lib for lib in SERVER_LIBRARIES if lib != "streamlit")
    assert _offenders("dashboard", ("lab", "worker", "api", "migrations", *servers)) == []


# The libraries that speak HTTP: of the lab's packages only the public client (fedgen_lab) uses
# one, so the dashboard and researchers share one client (its retries, errors and streams).
HTTP_LIBRARIES = (
    "httpx",
    "httpcore",
    "requests",
    "urllib3",
    "urllib.request",
    "http.client",
    "aiohttp",
)


def _http_imports(source: str) -> list[str]:
    """The HTTP libraries `source` imports, at any depth, however spelled (`from urllib
    import request` included: a `from` import counts as each module it may load)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found += [n for n in names if _under(n, HTTP_LIBRARIES)]
    return found


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("import httpx", ["httpx"]),
        ("def f():\n    from urllib import request", ["urllib.request"]),
        ("import http.client as c", ["http.client"]),
        (
            "from requests.adapters import HTTPAdapter",
            ["requests.adapters", "requests.adapters.HTTPAdapter"],
        ),
        ("from fedgen_lab.http import Transport", []),
        ("from urllib.parse import quote", []),
    ],
)
def test_http_imports_are_found_however_spelled(source: str, found: list[str]) -> None:
    assert _http_imports(source) == found


def test_dashboard_imports_no_http_library() -> None:
    """The dashboard talks to the API through fedgen_lab (the researchers' client too), never
    through an HTTP library of its own."""
    offenders = sorted(
        f"{f.relative_to(ROOT)}: {m}"
        for f in _sources("dashboard")
        for m in _http_imports(f.read_text(encoding="utf-8"))
    )
    assert offenders == [], "handed on:\n" + "\n".join(offenders)


def test_client_imports_no_server_package() -> None:
    """fedgen_lab/ (the public client) talks HTTP; of the lab it imports fedgen/ and vocab/ (the
    wire models: vocab.schemas.*) only: no api/, lab/, worker, database or UI code."""
    forbidden = ("lab", "worker", "dashboard", "api", "migrations", *SERVER_LIBRARIES)
    assert _offenders("fedgen_lab", forbidden) == []


def test_migrations_import_neither_api_nor_worker() -> None:
    assert _offenders("migrations", ("api", "worker", "dashboard")) == []


def test_no_package_imports_admin() -> None:
    """admin/ (the `fedgen-lab` command) is the top floor: it starts the API and the worker,
    and nothing below imports it back (the worker starts itself: `python -m worker`)."""
    below = [p for p in PACKAGES if p != "admin"]
    assert [o for p in below for o in _offenders(p, ("admin",))] == []


def test_admin_stands_on_api_worker_lab_and_fedgen() -> None:
    """admin/ imports api/, worker/, lab/, migrations/ (db upgrade) and fedgen/; not the
    dashboard's code (it runs the dashboard's Streamlit app by its path) nor the HTTP client."""
    assert _offenders("admin", ("dashboard", "fedgen_lab", "streamlit")) == []


# The `fedgen` command's lab verbs (submit, runs, follow, pull, push, cancel) live in the
# client, which stands on fedgen: fedgen/cli.py loads them through the `fedgen.commands` entry
# points that pyproject declares, and no fedgen module imports or names the client.
COMMANDS_GROUP = "fedgen.commands"


def test_the_fedgen_commands_entry_points_stand_above_fedgen() -> None:
    """Each `fedgen.commands` target is a module of a package above fedgen that imports
    fedgen; fedgen imports no fedgen_lab at any depth, nor names a module or object of it in
    a string (fedgen.versions names the package to hash its code, which loads nothing)."""
    from fedgen.cli import COMMANDS_GROUP as loaded_group

    assert loaded_group == COMMANDS_GROUP
    targets = _pyproject()["project"]["entry-points"][COMMANDS_GROUP].values()
    modules = [t.partition(":")[0] for t in targets]
    assert modules == ["fedgen_lab.verbs"]
    for module in modules:
        path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
        assert any(_under(m, ("fedgen",)) for m in _imports(path)), module
    assert _offenders("fedgen", ("fedgen_lab",)) == []
    named = {
        f"{f.relative_to(ROOT)}: {node.value}"
        for f in _sources("fedgen")
        for node in _nodes(_tree(f))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"fedgen_lab(\.[\w.]+(:\w+)?|:\w+)", node.value)
    }
    assert named == set()


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
    """The packages' import graph is acyclic (fedgen -> lab -> api | worker, migrations -> lab,
    api | worker -> admin)."""
    assert _cycle(_package_graph()) == []


# A "module:attr" string that names a module of another package (what uvicorn, entry points
# and lazy loaders take): the file must import that module too, so the walk above sees the
# dependency (`fedgen-lab api` once reached api/ only through "api.main:create_app").
_MODULE_ATTR = re.compile(
    r"(?P<module>[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*):[A-Za-z_][A-Za-z0-9_]*"
)


def _bare_module_strings(source: str, package: list[str]) -> list[str]:
    """The "module:attr" strings of `source` (a module of `package`) that name a module of
    another of our packages which `source` does not import."""
    tree = _parsed(source)
    imported = set(_imports_in(tree, package))
    out = []
    for node in _nodes(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        found = _MODULE_ATTR.fullmatch(node.value.strip())
        if found is None:
            continue
        module = found["module"]
        top = module.split(".")[0]
        if top in PACKAGES and top != package[0] and _is_ours(module) and module not in imported:
            out.append(node.value)
    return out


def test_module_attr_strings_name_imported_modules() -> None:
    """No package reaches another through a bare "module:attr" string alone."""
    offenders = [
        f"{f.relative_to(ROOT)}: {s!r}"
        for p in PACKAGES
        for f in _sources(p)
        for s in _bare_module_strings(f.read_text(encoding="utf-8"), _module_of(f).split(".")[:1])
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('APP = "api.main:create_app"', ["api.main:create_app"]),
        ('def f():\n    run("api.main:create_app", factory=True)', ["api.main:create_app"]),
        ('from api.main import create_app\nAPP = "api.main:create_app"', []),
        ('import api.main\nAPP = "api.main:create_app"', []),
        ('CLS = "admin.cli:main"', []),  # its own package: a lazy load inside one floor
        ('URL = "redis:6379"', []),
    ],
)
def test_a_bare_module_attr_string_is_found(source: str, found: list[str]) -> None:
    assert _bare_module_strings(source, ["admin"]) == found


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


def _pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def _fedgen_roots() -> set[str]:
    """Where the library starts: fedgen.runner, the `fedgen` command ([project.scripts]; also
    `python -m fedgen`, fedgen/__main__.py) and the plugin modules pyproject declares as entry
    points ([project.entry-points])."""
    project = _pyproject()["project"]
    named = [
        *project["scripts"].values(),
        *(v for group in project.get("entry-points", {}).values() for v in group.values()),
    ]
    commands = {v.partition(":")[0] for v in named}
    return {"fedgen.runner", "fedgen.__main__"} | {m for m in commands if _under(m, ("fedgen",))}


def _named_modules(path: Path) -> Iterator[str]:
    """The fedgen modules `path` names in a string (`"fedgen.algorithms.builtin"`, a built-in's
    `"fedgen.data.cifar:load_cifar"`), which importlib loads: late imports too."""
    for node in _nodes(_tree(path)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            module = node.value.partition(":")[0]
            if _under(module, ("fedgen",)) and _is_ours(module):
                yield module


def _declared_modules() -> set[str]:
    """The modules the built-in declarations name (algorithm classes, model builders, dataset
    loaders: `"module:attr"`, imported when a run builds them)."""
    from fedgen.algorithms.registry import builtin_algorithms
    from fedgen.data.registry import datasets
    from fedgen.models.registry import models

    named = [
        *(d.algorithm_cls for d in builtin_algorithms()),
        *(d.builder for d in models()),
        *(d.loader for d in datasets()),
    ]
    return {n.partition(":")[0] for n in named if isinstance(n, str)}


def _reachable(roots: set[str], declared: set[str]) -> set[str]:
    """The fedgen modules `roots` load: their imports at any depth, the modules they name for
    importlib, the packages above each, and the declared modules once their registry is loaded."""
    seen: set[str] = set()
    todo = sorted(roots)
    while todo:
        module = todo.pop()
        if module in seen or not _is_ours(module):
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        path = _module_file(module)
        todo += [m for m in (*_imports(path), *_named_modules(path)) if _under(m, ("fedgen",))]
        if module.endswith(".registry"):
            todo += sorted(m for m in declared if m.rpartition(".")[0] == module.rpartition(".")[0])
    return seen


def test_every_fedgen_module_is_one_the_library_runs() -> None:
    """Every module of fedgen/ is loaded from fedgen.runner or the `fedgen` command (imports at
    any depth, importlib names, the built-ins' declarations), or is a declared plugin: a module
    only the lab's server uses belongs in vocab/ or lab/, not in the library."""
    declared = _declared_modules()
    found = _reachable(_fedgen_roots(), declared)
    assert declared <= found  # every declared module's registry is loaded
    every = {_module_of(f) for f in _sources("fedgen")}
    assert sorted(every - found) == []


def test_the_reachability_walk_follows_late_and_named_imports() -> None:
    """Late imports, importlib names and declarations count; a module nothing loads does not."""
    found = _reachable({"fedgen.cli"}, _declared_modules())
    assert "fedgen.export" in found  # imported inside a function of fedgen.cli
    assert "fedgen.algorithms.builtin" in found  # importlib.import_module("fedgen....builtin")
    assert "fedgen.algorithms.fedgen" in found  # a built-in's "fedgen.algorithms.fedgen:FedGen"
    assert "fedgen.runner" not in _reachable({"fedgen.stats"}, set())


# -- module cycles -------------------------------------------------------------------------
# Inside each package the modules form no cycle either: every import counts, at any depth
# (function-level and TYPE_CHECKING ones included), so a late import cannot hide one. A
# package's __init__ is a module like any other: `from pkg import name` imports it (the rules
# of `_resolve`), an __init__ importing its submodules is an edge, and so is a submodule
# importing its package's __init__. Importing `pkg.sub` runs pkg/__init__.py first, but
# that is Python's loading order, not a dependency of the importer's: it is no edge here.


def _module_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (a name imported from a module,
    `from pkg.mod import f`, counts as that module)."""
    files = {_module_of(f): f for f in _sources(package)}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, f in files.items():
        for imported in _imports(f):
            parts = imported.split(".")
            while parts and ".".join(parts) not in files:
                parts.pop()
            if parts:
                graph[module].add(".".join(parts))
    return graph


def _knots(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of `graph` that are cycles (more than one node, or a
    node importing itself), each sorted, in order of their first node (Tarjan's algorithm,
    iterative: a deep import chain does not reach Python's recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.append(sorted(component))
    return sorted(found)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_cycle(package: str) -> None:
    """No module of `package` imports, however late, a module that imports it back (directly
    or through others): each package's modules stack in floors of their own."""
    knots = _knots(_module_graph(package))
    assert not knots, "module cycles:\n" + "\n".join(
        f"  {len(k)} modules: {', '.join(k)}" for k in knots
    )


@pytest.mark.parametrize(
    ("graph", "knots"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": {"a"}}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"a"}, "b": {"a"}}, [["a"]]),
        (
            {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": set()},
            [["a", "b"], ["c", "d", "e"]],
        ),
    ],
)
def test_the_knot_finder_names_each_cycle(
    graph: dict[str, set[str]], knots: list[list[str]]
) -> None:
    assert _knots(graph) == knots


def test_the_module_graph_counts_late_and_type_checking_imports() -> None:
    """An import inside a function or an `if TYPE_CHECKING:` block is an edge like any other."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from fedgen.spec import ExperimentSpec\n"
        "def f():\n    from fedgen import plugins\n"
    )
    package = ["fedgen"]
    found = [
        m
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom)
        for m in _resolve(node, package)
    ]
    assert found == ["typing", "fedgen.spec", "fedgen.plugins"]


# -- no re-exports ---------------------------------------------------------------------------
# Every name is imported from the module that defines it: a product module never hands on a
# name it imported (no `__all__` listing one, no `import x as x`, no importer anywhere, product,
# test, example plugin, bench or script, reaching a name through a module that only imports it).
# A name moved to a new home is imported from there, so a module's imports say where each name
# lives and no old path lingers as a shim.

# Where importers live: the product packages and everything that imports them.
IMPORTERS = (*PACKAGES, "tests", "examples", "bench", "scripts")

# The one façade: fedgen_lab/__init__.py is the public client's documented entry
# (`import fedgen_lab; fedgen_lab.connect()`, its docstring and the README): it deliberately
# hands on the client's API from fedgen_lab.lab and fedgen_lab.errors. No other module may.
FACADES = frozenset({"fedgen_lab"})


def _bound(targets: list[ast.expr]) -> Iterator[str]:
    for t in targets:
        if isinstance(t, ast.Name):
            yield t.id
        elif isinstance(t, ast.Tuple | ast.List):
            yield from _bound(list(t.elts))
        elif isinstance(t, ast.Starred):
            yield from _bound([t.value])


def _defined(body: list[ast.stmt]) -> set[str]:
    """The names a module's top level defines itself: functions, classes, assignments and type
    aliases, inside module-level `if`/`try`/`with`/`for` blocks too. An import binds a name but
    defines none."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(_bound(node.targets))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            names.update(_bound([node.target]))
        elif type(node).__name__ == "TypeAlias":  # `type X = ...` (Python 3.12's statement)
            names.update(_bound([node.name]))  # type: ignore[attr-defined]
        elif isinstance(node, ast.If | ast.While):
            names |= _defined(node.body) | _defined(node.orelse)
        elif isinstance(node, ast.For | ast.AsyncFor):
            names |= set(_bound([node.target])) | _defined(node.body) | _defined(node.orelse)
        elif isinstance(node, ast.With | ast.AsyncWith):
            names |= _defined(node.body)
        elif isinstance(node, ast.Try):
            names |= _defined(node.body) | _defined(node.orelse) | _defined(node.finalbody)
            for handler in node.handlers:
                names |= _defined(handler.body)
    return names


def _module_file(module: str) -> Path | None:
    """The source of product module `module` (a package's __init__.py), or None when it is
    none of ours."""
    if not _under(module, PACKAGES):
        return None
    path = ROOT.joinpath(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _reexport_findings(
    source: str,
    package: list[str],
    defined_in: Callable[[str], set[str] | None],
    is_module: Callable[[str], bool],
) -> list[str]:
    """Each `from M import name` in `source` (any depth; relative ones resolved inside
    `package`) whose M is a product module (`defined_in(M)` is not None) that does not define
    `name`, as "M.name"; `from pkg import submodule` is an import of a module and fine."""
    found: list[str] = []
    for node in _nodes(_parsed(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = package[: len(package) - node.level + 1] if node.level else []
        module = ".".join([*base, node.module] if node.module else base)
        if module in FACADES or (defined := defined_in(module)) is None:
            continue
        found += [
            f"{module}.{a.name}"
            for a in node.names
            if a.name != "*" and a.name not in defined and not is_module(f"{module}.{a.name}")
        ]
    return found


def _product_defined(module: str, cache: dict[str, set[str] | None] = {}) -> set[str] | None:  # noqa: B006 - a memo
    if module not in cache:
        path = _module_file(module)
        cache[module] = _defined(_tree(path).body) if path else None
    return cache[module]


def _code_of(path: Path) -> str:
    """The Python in `path`: a module's text, a notebook's code cells (IPython's `%` and `!`
    lines left out) or a Markdown file's ```python blocks."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        cells = [c for c in json.loads(text)["cells"] if c["cell_type"] == "code"]
        lines = [line for c in cells for line in "".join(c["source"]).splitlines()]
        return "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))
    if path.suffix == ".md":
        return "\n".join(re.findall(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL))
    return text


def _importer_files() -> list[Path]:
    """Every file that may import a product name: the modules of IMPORTERS, the notebooks
    under examples/ and the Python blocks of the docs and READMEs."""
    found = [f for top in IMPORTERS for f in sorted((ROOT / top).rglob("*.py"))]
    found += sorted((ROOT / "examples").rglob("*.ipynb"))
    found += [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return found + sorted((ROOT / "examples").rglob("*.md"))


def _attribute_findings(
    source: str,
    package: list[str],
    defined_in: Callable[[str], set[str] | None],
    is_module: Callable[[str], bool],
) -> list[str]:
    """The same rule for a name read off an imported module (`import pkg.mod as m; m.name`,
    `from pkg import mod; mod.name`), as "pkg.mod.name". A local name that is also bound
    otherwise in `source` (an assignment, an argument) is left alone: it may not be the
    module."""
    tree = _parsed(source)
    modules: dict[str, str] = {}
    rebound: set[str] = set()
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                local = a.asname or a.name.split(".")[0]
                modules[local] = a.name if a.asname else local
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            for a in node.names:
                if is_module(f"{module}.{a.name}"):
                    modules[a.asname or a.name] = f"{module}.{a.name}"
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            rebound.add(node.id)
        elif isinstance(node, ast.arg):
            rebound.add(node.arg)
    found: list[str] = []
    for node in _nodes(tree):
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        chain: list[str] = []
        value: ast.expr = node
        while isinstance(value, ast.Attribute):
            chain.insert(0, value.attr)
            value = value.value
        if not isinstance(value, ast.Name) or value.id not in modules or value.id in rebound:
            continue
        module = modules[value.id]
        while chain and is_module(f"{module}.{chain[0]}"):
            module = f"{module}.{chain.pop(0)}"
        if not chain or chain[0].startswith("__") or module in FACADES:
            continue
        defined = defined_in(module)
        if defined is not None and chain[0] not in defined:
            found.append(f"{module}.{chain[0]}")
    return sorted(set(found))


def test_every_name_is_imported_from_its_home() -> None:
    """No `from M import name` anywhere (product, tests, example plugins, bench, scripts,
    notebooks, the docs' code) reaches `name` through a product module M that merely
    imports it: M must define it."""
    offenders = []
    for f in _importer_files():
        package = _module_of(f).split(".")
        if f.name != "__init__.py":
            package = package[:-1]
        offenders += [
            f"{f.relative_to(ROOT)}: {name}"
            for finding in (_reexport_findings, _attribute_findings)
            for name in finding(_code_of(f), package, _product_defined, _is_ours)
        ]
    assert offenders == [], "imported from a module that does not define it:\n" + "\n".join(
        offenders
    )


def _reexport_declarations(source: str, is_module: Callable[[str], bool] = bool) -> list[str]:
    """What a module's own text hands on: `__all__` entries it does not define (a submodule of
    a package, `is_module(entry)`, is fine) and `import x as x` / `from m import x as x`
    (the explicit re-export idiom)."""
    tree = _parsed(source)
    defined = _defined(tree.body)
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found += [f"{a.name} as {a.asname}" for a in node.names if a.asname == a.name]
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign | ast.AugAssign)
            else []
        )
        value = getattr(node, "value", None)
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and isinstance(
            value, ast.List | ast.Tuple
        ):
            found += [
                f"__all__: {e.value}"
                for e in value.elts
                if isinstance(e, ast.Constant)
                and e.value not in defined
                and not is_module(str(e.value))
            ]
    return found


def test_no_product_module_hands_on_a_name() -> None:
    """A product module's `__all__` lists only names it defines, and no product module marks
    an imported name for re-export (`from m import x as x`)."""
    offenders = []
    for package in PACKAGES:
        for f in _sources(package):
            module = _module_of(f)
            if module in FACADES:
                continue
            prefix = f"{module}." if f.name == "__init__.py" else None  # a package's submodules

            def submodule(name: str, prefix: str | None = prefix) -> bool:
                return prefix is not None and _is_ours(prefix + name)

            offenders += [
                f"{f.relative_to(ROOT)}: {what}"
                for what in _reexport_declarations(f.read_text(encoding="utf-8"), submodule)
            ]
    assert offenders == [], "handed on:\n" + "\n".join(offenders)


# A tiny product for the checkers below: `home` defines, `shim` imports and hands on.
_SYNTHETIC = {
    "p.home": (
        "import os\n"
        "from typing import TypeAlias\n"
        "X = 1\n"
        "Y: int = 2\n"
        "Alias: TypeAlias = int\n"
        "A, (B, *C) = 1, (2, 3)\n"
        "def f(): pass\n"
        "async def g(): pass\n"
        "class K: pass\n"
        "if os.name:\n    Z = 3\nelse:\n    Z = 4\n"
        "try:\n    import json as T\nexcept ImportError:\n    T = None\n"
        "Declared: int\n"
    ),
    "p.shim": "from p.home import X, K\nfrom p.home import f as f\nW = X\n",
    "p": "from p.home import X\n",
}


def _synthetic_defined(module: str) -> set[str] | None:
    source = _SYNTHETIC.get(module)
    return _defined(ast.parse(source).body) if source is not None else None


@pytest.mark.parametrize(
    ("source", "package", "found"),
    [
        ("from p.home import X, Y, Alias, A, B, C, f, g, K, Z, T", [], []),
        ("from p.home import os, TypeAlias", [], ["p.home.os", "p.home.TypeAlias"]),
        ("from p.home import Declared", [], ["p.home.Declared"]),  # annotated, never assigned
        ("from p.shim import W, X, K, f", [], ["p.shim.X", "p.shim.K", "p.shim.f"]),
        ("def late():\n    from p.shim import X", [], ["p.shim.X"]),
        ("from .shim import X\nfrom . import home", ["p", "sub"], []),
        ("from .shim import X\nfrom . import home", ["p"], ["p.shim.X"]),
        ("from ..shim import K", ["p", "sub"], ["p.shim.K"]),
        ("from p import home, shim", [], []),
        ("from p import X", [], ["p.X"]),
        ("from elsewhere import X\nfrom p.home import *", [], []),
        ("from fedgen_lab import connect", [], []),
    ],
)
def test_the_reexport_checker_finds_names_imported_through_a_module(
    source: str, package: list[str], found: list[str]
) -> None:
    modules = {"p.home", "p.shim"}
    found_ = _reexport_findings(source, package, _synthetic_defined, modules.__contains__)
    assert found_ == found


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("import p.shim\np.shim.W, p.shim.X, p.home.K", ["p.shim.X"]),
        ("import p.shim as s\ns.K(s.W)", ["p.shim.K"]),
        ("from p import shim, home\nshim.f(home.f, home.__file__)", ["p.shim.f"]),
        ("def g():\n    from p import shim\n    return shim.X", ["p.shim.X"]),
        ("from p import shim\ndef g(shim):\n    return shim.X", []),  # an argument
        ("from p import home\nhome = object()\nhome.X", []),
        ("import p\np.home.X, p.X", ["p.X"]),  # p/__init__ only imports X
        ("import elsewhere\nelsewhere.X", []),
    ],
)
def test_the_reexport_checker_finds_names_read_off_a_module(source: str, found: list[str]) -> None:
    modules = {"p.home", "p.shim"}.__contains__
    assert _attribute_findings(source, [], _synthetic_defined, modules) == found


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from a import x\n__all__ = ['x', 'y']\ny = 1\n", ["__all__: x"]),
        ("from a import x\n__all__ = ('y',)\ndef y(): pass\n", []),
        ("from a import x as x\nimport b as b\nimport c as d\n", ["x as x", "b as b"]),
        ("from . import sub\n__all__ = ['sub']\n", []),
        ("X: int = 1\n__all__: list[str] = ['X', 'Z']\n", ["__all__: Z"]),
    ],
)
def test_the_reexport_checker_reads_all_and_aliases(source: str, found: list[str]) -> None:
    assert _reexport_declarations(source, {"sub"}.__contains__) == found


def test_notebooks_and_docs_are_read_as_their_code(tmp_path: Path) -> None:
    """A notebook's code cells (not its Markdown, not IPython's magics) and a Markdown file's
    Python blocks (not its shell blocks) are what the import check reads."""
    notebook = tmp_path / "n.ipynb"
    cells = [
        {"cell_type": "markdown", "source": ["from p.shim import K\n"]},
        {"cell_type": "code", "source": ["%matplotlib inline\n", "from p.shim import X\n"]},
        {"cell_type": "code", "source": "!pip list\nimport os"},
    ]
    notebook.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    markdown = tmp_path / "r.md"
    markdown.write_text(
        "```\nfrom p.shim import K\n```\n```python\nfrom p.shim import X\n```\n", encoding="utf-8"
    )
    modules = {"p.home", "p.shim"}.__contains__
    for path in (notebook, markdown):
        assert _reexport_findings(_code_of(path), [], _synthetic_defined, modules) == ["p.shim.X"]
