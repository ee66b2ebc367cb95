"""Loading one entry-point group of plugins: the part each registry calls on first use.

A registry (`fedgen.algorithms.registry`, `fedgen.data.registry`, `fedgen.models.registry`)
calls `load_group(group, register)` with the function that turns what an entry point resolved
to into its declaration and registers it. Each entry point is imported once per process
(again with `force`), each in its own try/except: one that fails to import or to register is
recorded with its error and never stops the built-ins or the other plugins. This module sits
below the registries and imports none of them; `fedgen.plugins`, above them, loads every
group (`fedgen plugins`, the start-up announcement, the versions a run records).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Literal

Kind = Literal["algorithm", "dataset", "model"]
GROUPS: dict[str, Kind] = {
    "fedgen.algorithms": "algorithm",
    "fedgen.datasets": "dataset",
    "fedgen.models": "model",
}
MAX_ERROR_CHARS = 500
#: `register(obj, source)`: register what an entry point resolved to, given the distribution
#: it came from; returns the registered name.
Register = Callable[[Any, str], str]


@dataclass(frozen=True)
class PluginRecord:
    """One entry point and what became of it: `provides` when loaded, else `error`."""

    kind: Kind
    name: str  # the entry point's name
    target: str  # "module:attribute"
    distribution: str | None
    version: str | None
    provides: str | None = None  # the registered algorithm's, dataset's or model's name
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def describe(self) -> str:
        """'algorithm fedavgm (fedgen-fedavgm 0.1.0)'."""
        dist = f"{self.distribution or '?'} {self.version or '?'}"
        return f"{self.kind} {self.name} ({dist})"


_lock = threading.RLock()
_records: dict[str, tuple[PluginRecord, ...]] = {}


def _error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


def _load_one(kind: Kind, ep: metadata.EntryPoint, register: Register) -> PluginRecord:
    dist = getattr(ep, "dist", None)
    name = dist.name if dist is not None else None
    version = dist.version if dist is not None else None
    record = PluginRecord(kind, ep.name, ep.value, name, version)
    try:
        provides = register(ep.load(), name or ep.name)
    except Exception as exc:  # noqa: BLE001 - any failure is the plugin's, reported by name
        return dataclasses.replace(record, error=_error(exc))
    return dataclasses.replace(record, provides=provides)


def load_group(group: str, register: Register, *, force: bool = False) -> tuple[PluginRecord, ...]:
    """Import and register every installed plugin of entry-point `group` once (again with
    `force`: tests); the records of its entry points, sorted by name."""
    with _lock:
        if group in _records and not force:
            return _records[group]
        _records[group] = ()  # a plugin that reads the registry while loading sees no recursion
        found = [
            _load_one(GROUPS[group], ep, register)
            for ep in sorted(metadata.entry_points(group=group), key=lambda e: e.name)
        ]
        _records[group] = tuple(found)
        return _records[group]
