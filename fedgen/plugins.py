"""Plugins: algorithms and datasets that installed packages add through entry points.

An installed distribution declares an entry point in group `fedgen.algorithms` that
resolves to an `AlgorithmDecl` (`fedgen.algorithms.registry`), or in `fedgen.datasets`
to a `DatasetDecl` (`fedgen.data.registry`); either may also be a zero-argument
callable returning one. `load()` imports each once per process and registers it, every
plugin in its own try/except: one that fails to import or to register is recorded with
its error and never stops the built-ins or the other plugins. The registries call
`load()` on first use, so every process (CLI, API, worker, dashboard) sees the same
plugins; the CLI, the API and the worker also `announce()` them on stderr at start.
`fedgen plugins` lists what was loaded, with versions and errors; a run records the
loaded plugins' names and versions in `versions` (`fedgen.versions`).
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Literal, TextIO

Kind = Literal["algorithm", "dataset"]
GROUPS: dict[str, Kind] = {"fedgen.algorithms": "algorithm", "fedgen.datasets": "dataset"}
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class PluginRecord:
    """One entry point and what became of it: `provides` when loaded, else `error`."""

    kind: Kind
    name: str  # the entry point's name
    target: str  # "module:attribute"
    distribution: str | None
    version: str | None
    provides: str | None = None  # the registered algorithm's or dataset's name
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def describe(self) -> str:
        """'algorithm fedavgm (fedgen-fedavgm 0.1.0)'."""
        dist = f"{self.distribution or '?'} {self.version or '?'}"
        return f"{self.kind} {self.name} ({dist})"


_lock = threading.RLock()
_records: tuple[PluginRecord, ...] | None = None


def _error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


def _register(kind: Kind, obj: Any, source: str) -> str:
    """Register what an entry point resolved to; returns the registered name."""
    if kind == "algorithm":
        from fedgen.algorithms.registry import AlgorithmDecl, register_algorithm

        decl = obj() if callable(obj) and not isinstance(obj, AlgorithmDecl) else obj
        if not isinstance(decl, AlgorithmDecl):
            raise TypeError(f"expected an AlgorithmDecl, got {type(decl).__name__}")
        return register_algorithm(dataclasses.replace(decl, source=source)).name
    from fedgen.data.registry import DatasetDecl, register_dataset

    dataset = obj() if callable(obj) and not isinstance(obj, DatasetDecl) else obj
    if not isinstance(dataset, DatasetDecl):
        raise TypeError(f"expected a DatasetDecl, got {type(dataset).__name__}")
    register_dataset(dataset)
    return str(getattr(dataset, "name", "?"))


def _load_one(kind: Kind, ep: metadata.EntryPoint) -> PluginRecord:
    dist = getattr(ep, "dist", None)
    name = dist.name if dist is not None else None
    version = dist.version if dist is not None else None
    record = PluginRecord(kind, ep.name, ep.value, name, version)
    try:
        provides = _register(kind, ep.load(), name or ep.name)
    except Exception as exc:  # noqa: BLE001 - any failure is the plugin's, reported by name
        return dataclasses.replace(record, error=_error(exc))
    return dataclasses.replace(record, provides=provides)


def load(*, force: bool = False) -> tuple[PluginRecord, ...]:
    """Import and register every installed plugin once (again with `force`: tests)."""
    global _records
    with _lock:
        if _records is not None and not force:
            return _records
        _records = ()  # a plugin that reads the registry while loading sees no recursion
        found: list[PluginRecord] = []
        for group, kind in GROUPS.items():
            for ep in sorted(metadata.entry_points(group=group), key=lambda e: e.name):
                found.append(_load_one(kind, ep))
        _records = tuple(found)
        return _records


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
