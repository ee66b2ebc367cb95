"""A run's cost beside its accuracy: bytes communicated and compute, from its stored rounds.

One definition for the sweep summary's cost columns, the plot data's cumulative x axes and
the Compare page (docs/metrics.md, "Cost"). Every trained round r >= 1 stores (the runner,
`fedgen/runner.py`):

- `bytes_up`: what the round's chosen users upload (each upload's `nbytes`), `bytes_down`:
  what the server sends them (`broadcast_nbytes`); round 0 (the initial model) stores none;
- `time_train_ms`: the chosen users' local training, summed over them (the clients' compute;
  one user after the other, as a simulation runs them), `time_server_ms`: the server's step
  (aggregation, and FedGen's generator or FedDF's distillation training).

Evaluation is not a cost of the method and is not counted. Every stored round counts, round R
under `before_training` included (it was trained, although never evaluated). MB are 10^6
bytes; times are in seconds. `cost_columns` is a group's columns (mean and seed std of each
total over its runs), the sweep summary's and the study tables' alike. Imports only the
standard library and `fedgen.stats` (the dashboard uses it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal, get_args

from fedgen.stats import seed_std

# The per-round metrics a cost is read from.
COST_METRICS: tuple[str, ...] = ("bytes_up", "bytes_down", "time_train_ms", "time_server_ms")
# A run's totals, named as the sweep summary's columns (<name>_mean, <name>_seed_std).
COST_TOTALS: tuple[str, ...] = ("mb_up", "mb_down", "mb_total", "client_train_s", "server_s")
# What an accuracy curve can be drawn against: the round, cumulative MB, cumulative seconds.
CurveAxis = Literal["round", "bytes", "compute"]
CURVE_AXES: tuple[CurveAxis, ...] = get_args(CurveAxis)
AXIS_UNITS: dict[str, str] = {"round": "round", "bytes": "MB", "compute": "s"}
AXIS_LABELS: dict[str, str] = {
    "round": "round",
    "bytes": "cumulative MB communicated (up + down)",
    "compute": "cumulative compute, s (clients' training + server)",
}
MB = 1e6


def _total(values: Sequence[float] | None) -> float:
    """The sum of a metric over the rounds that have it; NaN when none has."""
    present = [v for v in values or () if not math.isnan(v)]
    return math.fsum(present) if present else math.nan


def run_cost(curves: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """A run's totals (COST_TOTALS) from its per-round metrics (name -> values by round)."""
    up, down = _total(curves.get("bytes_up")), _total(curves.get("bytes_down"))
    return {
        "mb_up": up / MB,
        "mb_down": down / MB,
        "mb_total": (up + down) / MB,
        "client_train_s": _total(curves.get("time_train_ms")) / 1e3,
        "server_s": _total(curves.get("time_server_ms")) / 1e3,
    }


def cost_columns(costs: Sequence[Mapping[str, float]]) -> dict[str, float | None]:
    """A group's cost columns from its runs' totals (`run_cost`): `<total>_mean` (over the runs
    that report it) and `<total>_seed_std` (sample std, ddof 1, `fedgen.stats.seed_std`), None
    where no run (or, for the std, fewer than 2) reports it."""
    out: dict[str, float | None] = {}
    for name in COST_TOTALS:
        values = [v for c in costs if not math.isnan(v := c.get(name, math.nan))]
        sd = seed_std(values)
        out[f"{name}_mean"] = sum(values) / len(values) if values else None
        out[f"{name}_seed_std"] = None if math.isnan(sd) else sd
    return out


def _per_round(axis: CurveAxis, curves: Mapping[str, Sequence[float]], r: int) -> float:
    """What round r adds to the axis (a round without the figure adds 0: round 0)."""
    names = ("bytes_up", "bytes_down") if axis == "bytes" else ("time_train_ms", "time_server_ms")
    scale = MB if axis == "bytes" else 1e3
    total = 0.0
    for n in names:
        values = curves.get(n) or ()
        v = values[r] if r < len(values) else math.nan
        total += 0.0 if math.isnan(v) else v
    return total / scale


def cumulative(
    axis: CurveAxis, curves: Mapping[str, Sequence[float]], n_rounds: int
) -> list[float]:
    """The x of rounds 0..n_rounds-1 on `axis`: the round itself, or the MB (up + down) or
    seconds (clients' training + server) spent up to and including that round."""
    if axis == "round":
        return [float(r) for r in range(n_rounds)]
    out: list[float] = []
    running = 0.0
    for r in range(n_rounds):
        running += _per_round(axis, curves, r)
        out.append(running)
    return out
