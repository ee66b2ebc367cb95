"""Sweeps: a base spec and a grid of values for any spec field, expanded into runs.

Field names are dotted paths into the spec (`algorithm.name` is spelled
`algorithm`, whose values may be names or parameter mappings); each value is applied
with `fedgen.specdict.set_dotted`, by the rules of `fedgen.specdict.merge`. A key that
names several fields separated by commas ("partition.alpha,local_steps") is one
axis whose values are lists, one value per field: settings that go together (the
paper's rows) without a full cartesian product. Every expanded spec is validated,
so an invalid combination fails before anything runs.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.specdict import group_key, set_dotted

__all__ = ["MAX_SWEEP_RUNS", "SweepSpec", "expand", "group_key"]

MAX_SWEEP_RUNS = 1000


class SweepSpec(BaseModel):
    """A base spec plus `grid`: dotted field -> list of values (cartesian product)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("sweep", min_length=1, max_length=200, pattern=r"^[^\x00]*$")
    base: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict, max_length=16)

    @field_validator("grid")
    @classmethod
    def _grid_values(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        total = 1
        for key, values in grid.items():
            if not values:
                raise ValueError(f"grid.{key}: needs at least one value")
            if len(values) > MAX_SWEEP_RUNS:
                raise ValueError(
                    f"grid.{key}: {len(values)} values exceeds the limit {MAX_SWEEP_RUNS}"
                )
            fields = zipped_fields(key)
            if len(fields) > 1:
                for i, v in enumerate(values):
                    if not isinstance(v, list | tuple) or len(v) != len(fields):
                        raise ValueError(
                            f"grid.{key}[{i}]: expected a list of {len(fields)} values "
                            f"({', '.join(fields)}), got {v!r}"
                        )
            total *= len(values)
        if total > MAX_SWEEP_RUNS:
            raise ValueError(f"grid expands to {total} runs, more than the limit {MAX_SWEEP_RUNS}")
        return grid


def zipped_fields(key: str) -> list[str]:
    """The dotted fields a grid key sets: one, or several for a zipped key "a,b"."""
    return [f.strip() for f in key.split(",")]


def expand(sweep: SweepSpec, *, strict: bool = False) -> list[ExperimentSpec]:
    """Every combination of the grid applied to the base, validated, in a stable order.

    `strict` as in `fedgen.spec.parse_spec` (the API's JSON bodies).
    """
    keys = list(sweep.grid)
    specs: list[ExperimentSpec] = []
    errors: list[tuple[str, str]] = []
    for combo in itertools.product(*(sweep.grid[k] for k in keys)):
        data: dict[str, Any] = copy.deepcopy(sweep.base)
        for k, v in zip(keys, combo, strict=True):
            fields = zipped_fields(k)
            if len(fields) == 1:
                set_dotted(data, k, v)
            else:
                for f, fv in zip(fields, v, strict=True):
                    set_dotted(data, f, fv)
        label = ", ".join(f"{k}={v}" for k, v in zip(keys, combo, strict=True))
        try:
            specs.append(parse_spec(data, strict=strict))
        except SpecError as exc:
            errors.extend((f"[{label}] {loc}", msg) for loc, msg in exc.errors)
    if errors:
        raise SpecError(errors, f"sweep {sweep.name!r}")
    return specs
