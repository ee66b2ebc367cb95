"""Test-only algorithm declarations: FedAvg's code under a name and parameters of a test's
own, for tests that register an algorithm (put the registry back with the
`algorithms_restored` fixture of tests/conftest.py)."""

from __future__ import annotations

from typing import Any

from fedgen.algorithms.decl import AlgorithmDecl
from fedgen.algorithms.params import AlgorithmParams


def fedavg_under(name: str, params_cls: type[AlgorithmParams], **changes: Any) -> AlgorithmDecl:
    """A declaration of FedAvg named `name` with `params_cls` (whose `name` literal it must
    be), as a plugin from distribution "tests" would declare it."""
    fields: dict[str, Any] = {
        "label": name.title(),
        "algorithm_cls": "fedgen.algorithms.fedavg:FedAvg",
        "colour": "#123456",
        "ms_per_round": 660.0,
        "source": "tests",
    }
    return AlgorithmDecl(name=name, params_cls=params_cls, **{**fields, **changes})
