"""Protocol twins: runs that differ only in `partition.test_protocol` and so train alike.

The test protocol (per_user | global) decides what is evaluated, not what is trained:
nothing in `fedgen.data` reads it and every evaluate path reads it through the run's
`Fidelity`. Two such specs therefore share one training (`fedgen.runner.run_twins`),
each evaluated under its own protocol. An algorithm whose training reads the protocol
(its declaration's `trains_by_protocol`: FedDF validates its distillation as the run
evaluates) never has twins. This module is torch-free: `fedgen study` groups its runs
(`twin_groups`) and estimates their cost before any run starts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fedgen.algorithms.registry import get_algorithm
from fedgen.spec import ExperimentSpec

PROTOCOL_FIELD = "partition.test_protocol"


def _body(spec: ExperimentSpec) -> dict[str, Any]:
    """The spec without its test protocol (what twins must share)."""
    body = spec.model_dump(mode="json")
    body["partition"].pop("test_protocol", None)
    return body


def _differences(a: Any, b: Any, prefix: str = "") -> list[str]:
    """Dotted names of the fields where `a` and `b` differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b), key=str):
            out += _differences(a.get(key), b.get(key), f"{prefix}{key}.")
        return out
    return [] if a == b else [prefix.rstrip(".")]


def can_twin(spec: ExperimentSpec) -> bool:
    """Whether the spec's algorithm trains alike under every test protocol."""
    return not get_algorithm(spec.algorithm.name).trains_by_protocol


def check_twins(specs: Sequence[ExperimentSpec]) -> None:
    """ValueError unless the specs are equal but for `partition.test_protocol` and their
    algorithm's training does not read the protocol; the message names what differs."""
    if not specs:
        raise ValueError("twins: at least one spec is needed")
    first = _body(specs[0])
    for i, spec in enumerate(specs[1:], 1):
        diff = _differences(first, _body(spec))
        if diff:
            shown = ", ".join(diff[:5]) + (f" (+{len(diff) - 5} more)" if len(diff) > 5 else "")
            raise ValueError(
                f"twins: spec {i} differs from spec 0 in {shown}; twins may differ only in "
                f"{PROTOCOL_FIELD}"
            )
    if len(specs) > 1 and not can_twin(specs[0]):
        raise ValueError(
            f"twins: {specs[0].algorithm.name}'s training reads {PROTOCOL_FIELD} "
            "(trains_by_protocol), so each protocol needs its own training"
        )


def twin_groups(specs: Sequence[ExperimentSpec]) -> list[list[int]]:
    """Indices of `specs` grouped into twins (one training each), in order of first index.

    Specs equal but for the test protocol share a group; an algorithm that trains by
    protocol, or a spec with no twin, is a group of its own.
    """
    groups: dict[str, list[int]] = {}
    out: list[list[int]] = []
    for i, spec in enumerate(specs):
        if not can_twin(spec):
            out.append([i])
            continue
        key = json.dumps(_body(spec), sort_keys=True)
        if key in groups:
            groups[key].append(i)
        else:
            groups[key] = [i]
            out.append(groups[key])
    return out
