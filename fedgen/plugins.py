"""Plugins: algorithms, datasets and models that installed packages add through entry points.

An installed distribution declares an entry point in group `fedgen.algorithms` that
resolves to an `AlgorithmDecl` (`fedgen.algorithms.decl`), in `fedgen.datasets`
to a `DatasetDecl` (`fedgen.data.decl`), or in `fedgen.models` to a `ModelDecl`
(`fedgen.models.decl`); each may also be a zero-argument callable returning one. Each registry loads its own group on first use
(`fedgen.plugin_loader`: every plugin imported once per process, each in its own try/except,
so one that fails is recorded with its error and never stops the built-ins or the other
plugins), so every process (CLI, API, worker, dashboard) sees the same plugins. `load()` here
loads every group; the CLI, the API and the worker also `announce()` them on stderr at start.
`fedgen plugins` lists what was loaded, with versions and errors; a run records the
loaded plugins' names and versions in `versions` (`fedgen.versions`).
"""

from __future__ import annotations

import sys
from typing import TextIO

from fedgen.algorithms import registry as algorithm_registry
from fedgen.data import registry as dataset_registry
from fedgen.models import registry as model_registry
from fedgen.plugin_loader import GROUPS, PluginRecord

__all__ = [
    "announce",
    "failed",
    "load",
    "loaded",
    "table",
    "version_entries",
]


def load(*, force: bool = False) -> tuple[PluginRecord, ...]:
    """Import and register every installed plugin once (again with `force`: tests): the
    records of group `fedgen.algorithms`, then `fedgen.datasets`, then `fedgen.models`."""
    return (
        *algorithm_registry.load_plugins(force=force),
        *dataset_registry.load_plugins(force=force),
        *model_registry.load_plugins(force=force),
    )


def loaded() -> tuple[PluginRecord, ...]:
    """The plugins that loaded and registered."""
    return tuple(r for r in load() if r.ok)


def failed() -> tuple[PluginRecord, ...]:
    """The plugins that failed, each with its error."""
    return tuple(r for r in load() if not r.ok)


def announce(stream: TextIO | None = None, *, loaded_too: bool = False) -> None:
    """Load the plugins and say on stderr which failed (and, with `loaded_too`, which
    loaded): the line a process prints at start."""
    out = stream or sys.stderr
    records = load()
    if loaded_too and any(r.ok for r in records):
        names = ", ".join(r.describe() for r in records if r.ok)
        print(f"fedgen: plugins loaded: {names}", file=out)
    for r in records:
        if not r.ok:
            print(
                f"fedgen: plugin {r.describe()} failed to load and is skipped "
                f"(built-ins unaffected; see `fedgen plugins`): {r.error}",
                file=out,
            )


def version_entries() -> dict[str, str]:
    """{"plugin:<name>": "<distribution> <version>"} of every loaded plugin."""
    return {f"plugin:{r.name}": f"{r.distribution} {r.version}" for r in loaded()}


def table(records: tuple[PluginRecord, ...]) -> str:
    """`fedgen plugins`: one line per entry point (kind, name, provides, distribution,
    version, status), or a line saying none is installed."""
    if not records:
        return "no plugins installed (entry point groups: " + ", ".join(GROUPS) + ")"
    rows = [("kind", "name", "provides", "distribution", "version", "status")]
    for r in records:
        status = "loaded" if r.ok else f"error: {r.error}"
        rows.append(
            (r.kind, r.name, r.provides or "-", r.distribution or "?", r.version or "?", status)
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths, strict=True)) + "  " + row[5]
        for row in rows
    )
