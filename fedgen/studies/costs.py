"""Studies' CPU-time estimate: each algorithm's declared ms per round, scaled by dataset and model.

Runs that differ only in the test protocol share one training (`fedgen.protocol_twins`):
`estimate_trainings_cpu_s` counts each such group once.

The VM's speed varies about 2x from day to day, and the dataset and model factors are
guesses: `estimate_cpu_s` is an estimate, not a measurement. `format_duration` writes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from fedgen.algorithms.registry import get_algorithm
from fedgen.models.registry import get_model
from fedgen.protocol_twins import twin_groups
from fedgen.spec import ExperimentSpec

# Each algorithm's ms per round on one core at the paper setting is its declaration's
# `ms_per_round` (fedgen.algorithms.builtin says where the built-ins' come from; a plugin
# cannot register without one). The VM's speed varies about 2x from day to day, and the
# dataset factors and the models' `ms_factor` are guesses: this is an estimate, not a measurement.
EST_DATASET_FACTOR: dict[str, float] = {
    "mnist": 1.0,
    "fashion-mnist": 1.0,
    "emnist-letters": 1.5,
    "celeba": 4.0,
    "synthetic": 0.3,
}


def estimate_cpu_s(spec: ExperimentSpec) -> float:
    """Estimated CPU seconds of one run on one core (the algorithm's `ms_per_round`, scaled)."""
    work = spec.users_per_round * spec.local_steps / 200.0  # 1.0 at the paper setting
    ms = (
        get_algorithm(spec.algorithm.name).ms_per_round
        * EST_DATASET_FACTOR.get(spec.data.name, 1.0)
        * get_model(spec.model.name).ms_factor  # the model's declaration (fedgen.models)
        * (0.3 + 0.7 * work)
    )
    return ms * spec.rounds / 1000.0


def estimate_trainings_cpu_s(specs: Sequence[ExperimentSpec]) -> float:
    """Estimated CPU seconds of `specs` run as `fedgen study run` runs them: one training
    per group of protocol twins (their extra evaluations are not counted)."""
    return sum(max(estimate_cpu_s(specs[i]) for i in group) for group in twin_groups(specs))


def format_duration(seconds: float) -> str:
    """4.2 s, 20 s, 7.5 min, 3.2 h: never a rounded-away "0 min" (one decimal below 10 s,
    minutes from 1 min, hours from 2 h)."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
