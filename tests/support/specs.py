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


# Issue 32's baselines with small parameters, as their tests and the protocol-twin tests
# run them on tiny specs.
BASELINES_32: dict[str, dict[str, Any]] = {
    "scaffold": {"name": "scaffold", "global_lr": 1.0},
    "feddyn": {"name": "feddyn", "alpha": 0.01},
    "moon": {"name": "moon", "mu": 1.0, "temperature": 0.5},
    "fednova": {"name": "fednova", "local_steps_spread": 3},
    "fedadam": {"name": "fedadam", "server_lr": 0.03, "tau": 0.001},
    "fedyogi": {"name": "fedyogi", "server_lr": 0.03, "tau": 0.001},
    "fedavgm": {"name": "fedavgm", "server_momentum": 0.5, "server_lr": 0.5},
}
