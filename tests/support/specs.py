"""Tiny experiment specs for the simulation-library tests."""

from __future__ import annotations

from typing import Any

from fedgen.spec import ExperimentSpec, parse_spec
from fedgen.specdict import merge


def tiny_spec(**overrides: Any) -> ExperimentSpec:
    """A synthetic federated task small enough for a few-second test."""
    base: dict[str, Any] = {
        "data": {"name": "synthetic", "synthetic_samples": 1000, "synthetic_classes": 5},
        "partition": {"num_users": 5, "alpha": 1.0, "min_samples": 10},
        "users_per_round": 3,
        "rounds": 4,
        "local_steps": 5,
        "batch_size": 16,
        "lr": 0.05,
        "checkpoint_every": 2,
    }
    return parse_spec(merge(base, overrides))
