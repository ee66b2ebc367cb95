"""Sweeps: a base spec and a grid of values for any spec field, expanded into runs.

Field names are dotted paths into the spec (`algorithm.name` is spelled
`algorithm`, whose values may be names or parameter mappings); each value is applied
with `fedgen.specdict.set_dotted`, by the rules of `fedgen.specdict.merge`. A key that
names several fields separated by commas ("partition.alpha,local_steps") is one
axis whose values are lists, one value per field: settings that go together (the
paper's rows) without a full cartesian product. A field is applied before its
sub-fields (`algorithm` before `algorithm.mu`), whatever the grid's key order. Every
expanded spec is validated, so an invalid combination fails before anything runs.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.specdict import set_dotted

__all__ = ["MAX_SWEEP_RUNS", "SweepSpec", "expand"]

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


def _depth(key: str) -> int:
    """How deep the shallowest field of a grid key lies ("algorithm" 0, "algorithm.mu" 1).

    Keys are applied shallowest first, whatever their order in the grid: a field before its
    sub-fields, so `algorithm` (a name replaces the whole block) never drops the values of
    `algorithm.<param>`, and the schema's rule on the two keys (api.openapi) holds in any order.
    """
    return min(f.count(".") for f in zipped_fields(key))


def grid_location(keys: list[str], idx: list[int], loc: str) -> str | None:
    """Where in the grid an expanded spec's error `loc` comes from: `grid.<key>[i]` (plus the
    rest of the path, or `[j]` of a zipped key), or None when no grid value set that field."""
    for key, i in zip(keys, idx, strict=True):
        for j, field in enumerate(zipped_fields(key)):
            if loc == field or loc.startswith(field + "."):
                at = f"grid.{key}[{i}]" + (f"[{j}]" if "," in key else "")
                return at + loc[len(field) :]
    return None


def expand(sweep: SweepSpec, *, strict: bool = False) -> list[ExperimentSpec]:
    """Every combination of the grid applied to the base, validated, in a stable order.

    `strict` as in `fedgen.spec.parse_spec` (the API's JSON bodies).
    """
    keys = list(sweep.grid)
    specs: list[ExperimentSpec] = []
    errors: list[tuple[str, str]] = []
    for idx_t in itertools.product(*(range(len(sweep.grid[k])) for k in keys)):
        idx = list(idx_t)
        combo = [sweep.grid[k][i] for k, i in zip(keys, idx, strict=True)]
        data: dict[str, Any] = copy.deepcopy(sweep.base)
        for k, v in sorted(zip(keys, combo, strict=True), key=lambda kv: _depth(kv[0])):
            fields = zipped_fields(k)
            if len(fields) == 1:
                set_dotted(data, k, v)
            else:
                for f, fv in zip(fields, v, strict=True):
                    set_dotted(data, f, fv)
        try:
            specs.append(parse_spec(data, strict=strict))
        except SpecError as exc:
            for loc, msg in exc.errors:
                located = grid_location(keys, idx, loc)
                if located is None:  # from the base, or from the combination as a whole
                    label = ", ".join(
                        f"grid.{k}[{i}]={v!r}" for k, i, v in zip(keys, idx, combo, strict=True)
                    )
                    located, msg = (
                        (f"base.{loc}" if loc != "(root)" else "base"),
                        (f"{msg} (with {label})" if keys else msg),
                    )
                if (located, msg) not in errors:
                    errors.append((located, msg))
    if errors:
        raise SpecError(errors, f"sweep {sweep.name!r}")
    return specs
