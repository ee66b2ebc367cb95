"""A bounded in-process cache of what the server reads out of a run's stored spec.

A sweep's summary and plot data read every run's spec twice: flattened to dotted fields
(canonical, every default written out) to group the runs, and as a model to resolve the
fidelity profile its curve is read under. Parsing and resolving cost about a millisecond
a run, so a 1,000-run sweep spent seconds on it per request. What is derived depends on the
spec's JSON alone, so entries are keyed by that JSON's canonical text (sorted keys): a spec
never read before is parsed, any spec read again, by this request or a later one, is not.
Specs are written once per run, so an entry never goes stale; the bound only limits memory.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from fedgen.fidelity import resolve
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.specdict import flatten

MAX_ENTRIES = 20_000  # distinct specs (a few kB each)


@dataclass
class _Entry:
    """What has been derived from one spec so far; each part is computed on first need."""

    flat_read: bool = False
    flat: dict[str, Any] | None = None  # None once read: the spec no longer parses
    profile: tuple[str, int] | None = None  # (eval_timing, rounds)


_lock = threading.Lock()
_cache: OrderedDict[bytes, _Entry] = OrderedDict()


def _key(spec: dict[str, Any]) -> bytes:
    # Sorted keys: the same spec read back from JSONB in another key order hits the same entry.
    return orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)


def _entry(spec: dict[str, Any]) -> _Entry:
    """The spec's entry, a new empty one on a miss (the oldest dropped past the bound)."""
    key = _key(spec)
    with _lock:
        hit = _cache.get(key)
        if hit is None:
            hit = _cache[key] = _Entry()
            while len(_cache) > MAX_ENTRIES:
                _cache.popitem(last=False)
        else:
            _cache.move_to_end(key)
        return hit


def flat_spec(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The spec canonical and flattened (a fresh dict the caller may change); None if invalid."""
    entry = _entry(spec)
    if not entry.flat_read:
        # Two requests may both parse a new spec: same result, the later write wins.
        try:
            entry.flat = flatten(parse_spec(spec).model_dump(mode="json"))
        except SpecError:
            entry.flat = None
        entry.flat_read = True
    return None if entry.flat is None else dict(entry.flat)


def eval_profile(spec: dict[str, Any]) -> tuple[str, int]:
    """(eval_timing of the spec's resolved fidelity profile, its rounds R).

    Raises pydantic's ValidationError for a spec that does not validate, as
    `ExperimentSpec.model_validate` does.
    """
    entry = _entry(spec)
    if entry.profile is None:
        model = ExperimentSpec.model_validate(spec)
        entry.profile = (resolve(model).eval_timing, model.rounds)
    return entry.profile


def clear() -> None:
    """Forget everything (tests)."""
    with _lock:
        _cache.clear()
