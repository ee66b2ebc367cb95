"""A sweep's plot data: one statistic against a swept field, one series per value of another.

`GET /sweeps/{id}/plot-data` is computed here (the route only translates HTTP). Each point
pools the runs that share the series' `by` value and the point's `x` value, over seeds:

- final, best, top5: each run's own summary (`summary.final_acc`, `best_acc`, `top5_mean`,
  written by the runner with `fedgen.stats.summarize_curve`: docs/metrics.md). A succeeded
  run without a summary (an older row) gets the same figures from its stored curve.
- time_to_target: the first round whose accuracy is >= `target`, over the rounds the run's
  protocol evaluates (`fedgen.stats.reported_curve`). A run that never reaches it is censored
  at its last evaluated round: the point's mean is then a lower bound (`censored`), with no
  spread, never a mean over only the seeds that happened to reach it.

Spread: `std` is the std the sweep tables show (`fedgen.stats.mean_std`, population std
over seeds; top-5 pools each seed's five best rounds, as `pooled_top5` does, computed from
each run's `top5_mean`/`top5_std`); `ci95` is the Student t 95 % interval of the mean over
seeds (sample std, n-1 degrees of freedom; none for one run). lo/hi are the bar's ends.

`x=round|bytes|compute` (not spec fields) draws curves instead: a point per round the
protocol counts, its mean the runs' test accuracy at that round, its x the round, the
cumulative MB communicated or the cumulative compute in seconds (`fedgen.cost`), averaged
over the runs; `statistic` then applies to `groups` only.

Only succeeded runs count (n); the others are listed in `excluded` by status. Fields other
than x and by that still differ inside a point are named in `warnings`.
"""

from __future__ import annotations

import io
import json
import math
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from sqlalchemy.orm import Session

from fedgen.cost import AXIS_UNITS, COST_METRICS, CURVE_AXES, CurveAxis, cumulative
from fedgen.specdict import (
    SHORT_NAMES,
    differing_fields,
    format_value,
    group_fields,
    group_items,
    group_label,
    varying_within,
)
from fedgen.stats import mean_std, reported_curve, summarize_curve
from lab import curve_cache, spec_cache
from lab.analysis import flat_spec
from lab.models import Run
from lab.repository import metrics as metrics_repo
from lab.repository import sweeps as sweeps_repo
from vocab.run_status import RunStatus
from vocab.safe_csv import SafeWriter

Interval = Literal["std", "ci95"]
STATISTICS: tuple[str, ...] = ("final", "best", "top5", "time_to_target")
# Which summary field holds each per-run accuracy statistic (fedgen.events.RunSummary).
# val_best: the runner's RunSummary.val_best (absent or NaN without validation data: the run is left out)
SUMMARY_FIELD = {
    "final": "final_acc",
    "best": "best_acc",
    "top5": "top5_mean",
    "val_best": "val_best",
}
# Short names people type for the common fields: `by=algorithm` is `algorithm.name`.
ALIASES: dict[str, str] = {short: full for full, short in SHORT_NAMES.items()}
# Fields shown on a log axis whatever their values (Dirichlet α spans decades).
LOG_FIELDS = frozenset({"partition.alpha"})
CI_LEVEL = 0.95
NO_VALUE = "no_summary"  # succeeded, but no figure to plot (no summary and no stored round)


class PlotDataError(ValueError):
    """Input the plot data cannot be computed from: (query field, message) pairs."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{f}: {m}" for f, m in errors))


def resolve_field(name: str) -> str:
    """The dotted spec field a query names: an alias (`algorithm`, `alpha`, `dataset`) or itself."""
    name = name.strip()
    return ALIASES.get(name, name)


@dataclass(frozen=True)
class RunValue:
    """One counted run's statistic: `value`, and for top-5 the run's own std and round count."""

    run: Run
    value: float
    top5_std: float = 0.0
    top5_k: int = 5  # how many rounds the run's top-5 is over (fewer when it has < 5)
    censored: bool = False  # time to target: never reached, value is the last evaluated round


def _num(value: Any) -> float | None:
    """A finite float, or None (summaries store NaN as null or NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    v = float(value)
    return None if math.isnan(v) or math.isinf(v) else v


def _from_curve(run: Run, curve: Sequence[float]) -> dict[str, Any]:
    """A summary's accuracy figures from a stored curve (a row the runner left no summary on)."""
    timing, rounds = spec_cache.eval_profile(run.spec)
    s = summarize_curve(curve, timing, rounds)
    return {
        "final_acc": s.final,
        "final_round": s.final_round,
        "best_acc": s.best,
        "top5_mean": s.top5_mean,
        "top5_std": s.top5_std,
    }


def _time_to_target(run: Run, curve: Sequence[float], target: float) -> tuple[float, bool] | None:
    """(first round with accuracy >= target, False) or (last evaluated round, True: censored)."""
    timing, rounds = spec_cache.eval_profile(run.spec)
    values = reported_curve(curve, timing, rounds)
    if not values:
        return None
    for rnd, acc in enumerate(values):
        if acc >= target:
            return float(rnd), False
    return float(len(values) - 1), True


def run_values(
    session: Session, runs: list[Run], statistic: str, target: float | None
) -> dict[str, RunValue]:
    """The statistic of each succeeded run that has one, by run id."""
    done = [r for r in runs if r.status == RunStatus.SUCCEEDED]
    if statistic == "time_to_target":
        assert target is not None
        curves = curve_cache.acc_curves(session, done)
        out: dict[str, RunValue] = {}
        for r in done:
            found = _time_to_target(r, curves.get(r.id) or [], target)
            if found is not None:
                out[str(r.id)] = RunValue(r, found[0], censored=found[1])
        return out
    key = SUMMARY_FIELD[statistic]
    lacking = {r.id for r in done if _num((r.summary or {}).get(key)) is None}
    curves = curve_cache.acc_curves(session, [r for r in done if r.id in lacking])
    out = {}
    for r in done:
        summary = r.summary or {}
        if r.id in lacking:
            if not curves.get(r.id):
                continue
            summary = _from_curve(r, curves[r.id])
        value = _num(summary.get(key))
        if value is None:
            continue
        final_round = summary.get("final_round")
        k = min(5, final_round + 1) if isinstance(final_round, int) and final_round >= 0 else 5
        out[str(r.id)] = RunValue(r, value, _num(summary.get("top5_std")) or 0.0, k)
    return out


def t_quantile(df: int, level: float = CI_LEVEL) -> float:
    """Student's t quantile for a two-sided `level` interval with `df` degrees of freedom."""
    from scipy import stats  # imported here: only the ci95 interval needs scipy

    return float(stats.t.ppf(0.5 + level / 2.0, df))


def aggregate(
    values: list[RunValue], statistic: str, interval: str
) -> dict[str, float | bool | None]:
    """mean, std, lo, hi of a point's runs (None where there is no figure).

    top5's std pools every run's five best rounds (`fedgen.stats.pooled_top5`): the within-run
    variance (`top5_std`², population) plus the spread of the runs' means, weighted by rounds.
    """
    out: dict[str, float | bool | None] = {
        "mean": None,
        "std": None,
        "lo": None,
        "hi": None,
        "censored": False,
    }
    if not values:
        return out
    xs = [v.value for v in values]
    if statistic == "top5":
        w = sum(v.top5_k for v in values)
        m = sum(v.value * v.top5_k for v in values) / w
        var = sum(v.top5_k * (v.top5_std**2 + (v.value - m) ** 2) for v in values) / w
        s = math.sqrt(var)
    else:
        m, s = mean_std(xs)
    out["mean"] = m
    if any(v.censored for v in values):
        # A lower bound: no spread is honest for it.
        out["censored"] = True
        return out
    out["std"] = s
    if interval == "std":
        out["lo"], out["hi"] = m - s, m + s
    elif len(xs) >= 2:
        n = len(xs)
        sample_sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
        half = t_quantile(n - 1) * sample_sd / math.sqrt(n)
        out["lo"], out["hi"] = m - half, m + half
    return out


def _json_value(value: Any) -> Any:
    """A flat spec value as JSON (flatten turns lists into tuples)."""
    return list(value) if isinstance(value, tuple) else value


def _key(value: Any) -> str:
    """A value's canonical text: runs with equal values share a point."""
    return json.dumps(value, sort_keys=True, default=repr)


def _sort_key(value: Any) -> tuple[int, float, str]:
    """Numbers in numeric order, then other values by their text; a missing value first."""
    if value is None:
        return (0, 0.0, "")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (1, float(value), "")
    return (2, 0.0, format_value(value))


def is_log_x(field: str, xs: list[Any]) -> bool:
    """α always; else when the values are positive numbers spanning at least two decades."""
    if field in LOG_FIELDS:
        return True
    nums = [v for v in xs if v is not None]
    if not nums or any(isinstance(v, bool) or not isinstance(v, int | float) for v in nums):
        return False
    low, high = float(min(nums)), float(max(nums))
    return low > 0 and high / low >= 100


def _excluded(runs: list[Run], counted: dict[str, RunValue]) -> dict[str, Any]:
    """Runs that do not count, by status (a succeeded run without a figure: `no_summary`)."""
    out: dict[str, list[str]] = {}
    for r in runs:
        if str(r.id) in counted:
            continue
        status = r.status if r.status != RunStatus.SUCCEEDED else NO_VALUE
        out.setdefault(status, []).append(str(r.id))
    return {"counts": {s: len(ids) for s, ids in out.items()}, "run_ids": out}


def _check_fields(x: str, by: str, known: list[str], varying: list[str]) -> None:
    errors: list[tuple[str, str]] = []
    listed = ", ".join(varying) or "none"
    if x not in known and x not in CURVE_AXES:
        errors.append(
            (
                "x",
                f"unknown field {x!r}; fields that vary in this sweep: {listed} (or round, "
                "bytes, compute: accuracy per round against the round, cumulative MB or "
                "cumulative compute)",
            )
        )
    if by not in known:
        errors.append(("by", f"unknown field {by!r}; fields that vary in this sweep: {listed}"))
    elif by == x:
        errors.append(("by", f"must differ from x ({x}): one line per value of another field"))
    if errors:
        raise PlotDataError(errors)


def plot_data(
    session: Session,
    sweep_id: uuid.UUID,
    x: str,
    by: str = "algorithm",
    statistic: str = "top5",
    interval: str = "std",
    target: float | None = None,
) -> dict[str, Any]:
    """The statistic per (by value, x value) over seeds; see the module docstring.

    Raises PlotDataError naming `x`, `by` or `target` for a field the sweep's specs do not
    have (listing the fields that vary) or a time to target without a target.
    """
    if statistic == "time_to_target" and target is None:
        raise PlotDataError(
            [("target", "required with statistic=time_to_target: an accuracy, 0 < target <= 1")]
        )
    runs = sweeps_repo.runs_of_sweep(session, sweep_id, analysis=True)
    flats = {str(r.id): flat_spec(r) for r in runs}
    varying = differing_fields(flats.values())
    x_field, by_field = resolve_field(x), resolve_field(by)
    curve_axis = x_field in CURVE_AXES
    if curve_axis and statistic == "time_to_target":
        raise PlotDataError(
            [
                (
                    "statistic",
                    f"x={x_field} draws each round's test accuracy: time_to_target needs a "
                    "swept field as x",
                )
            ]
        )
    _check_fields(x_field, by_field, group_fields(flats.values()), varying)
    counted = run_values(session, runs, statistic, target)

    if curve_axis:
        axis = cast(CurveAxis, x_field)
        series, mixed = _curve_series(session, runs, flats, axis, by_field, interval)
        warnings = _curve_warnings(mixed, by_field)
    else:
        series, mixed = _series(runs, flats, counted, x_field, by_field, statistic, interval)
        warnings = _warnings(series, mixed, x_field, by_field, statistic, target)
    xs = [p["x"] for s in series for p in s["points"]]
    return {
        "sweep_id": str(sweep_id),
        "x": x_field,
        "x_axis": x_field if curve_axis else "field",
        "x_unit": AXIS_UNITS[x_field] if curve_axis else None,
        "by": by_field,
        "statistic": statistic,
        "target": target,
        "unit": "round" if statistic == "time_to_target" else "fraction",
        "interval": interval,
        "level": CI_LEVEL if interval == "ci95" else None,
        "log_x": False if curve_axis else is_log_x(x_field, xs),
        "series": series,
        "groups": _groups(flats, varying, counted, statistic, interval),
        "excluded": _excluded(runs, counted),
        "warnings": warnings,
        "varying": varying,
    }


def _curve_series(
    session: Session,
    runs: list[Run],
    flats: dict[str, dict[str, Any]],
    axis: CurveAxis,
    by_field: str,
    interval: str,
) -> tuple[list[dict[str, Any]], Counter[tuple[str, ...]]]:
    """x=round|bytes|compute: one series per `by` value, a point per round the protocol counts.

    A point pools the series' succeeded runs that reached the round: `mean` (± std or the 95 %
    interval) of their test accuracy there, `x` the mean over them of the round itself, the MB
    communicated (up + down) or the seconds of compute (clients' training + server) up to and
    including it (`fedgen.cost.cumulative`). And how many series pool runs that also differ in
    other fields (keyed by those fields).
    """
    done = [r for r in runs if r.status == RunStatus.SUCCEEDED]
    curves = curve_cache.acc_curves(session, done)
    per_round = (
        metrics_repo.metric_curves(session, [r.id for r in done], COST_METRICS)
        if axis != "round"
        else {}
    )
    members: dict[str, list[Run]] = {}
    by_values: dict[str, Any] = {}
    for r in runs:
        value = flats[str(r.id)].get(by_field)
        members.setdefault(_key(value), []).append(r)
        by_values[_key(value)] = value
    mixed: Counter[tuple[str, ...]] = Counter()
    series = []
    for bk, group in sorted(members.items(), key=lambda kv: _sort_key(by_values[kv[0]])):
        other = varying_within([flats[str(r.id)] for r in group])
        if other:
            mixed[tuple(other)] += 1
        by_round: dict[int, list[tuple[Run, float, float]]] = {}
        for r in group:
            if r.status != RunStatus.SUCCEEDED or not curves.get(r.id):
                continue
            timing, rounds = spec_cache.eval_profile(r.spec)
            accs = reported_curve(curves[r.id], timing, rounds)
            xs = cumulative(axis, per_round.get(r.id, {}), len(accs))
            for rnd, (acc, x) in enumerate(zip(accs, xs, strict=True)):
                by_round.setdefault(rnd, []).append((r, acc, x))
        points = []
        for rnd in sorted(by_round):
            at = by_round[rnd]
            vals = [RunValue(r, acc) for r, acc, _ in at]
            points.append(
                {
                    **_point(sum(x for *_, x in at) / len(at), vals, len(group), "final", interval),
                    "round": rnd,
                }
            )
        series.append({"by_value": _json_value(by_values[bk]), "points": points})
    return series, mixed


def _curve_warnings(mixed: Counter[tuple[str, ...]], by_field: str) -> list[str]:
    """A series that pools runs differing in more than the seed averages unlike curves."""
    return [
        f"{n} series pool runs that also differ in {', '.join(f)}: their curve averages "
        f"unlike runs (pick one of those fields as `by` instead of {by_field})"
        for f, n in sorted(mixed.items())
    ]


def _series(
    runs: list[Run],
    flats: dict[str, dict[str, Any]],
    counted: dict[str, RunValue],
    x_field: str,
    by_field: str,
    statistic: str,
    interval: str,
) -> tuple[list[dict[str, Any]], Counter[tuple[str, ...]]]:
    """One series per `by` value, its points sorted by x; and how many points pool runs that
    also differ in other fields (keyed by those fields)."""
    points: dict[tuple[str, str], list[Run]] = {}  # (by key, x key) -> members, all statuses
    by_keys: dict[str, Any] = {}
    x_keys: dict[str, Any] = {}
    for r in runs:
        flat = flats[str(r.id)]
        bk, xk = _key(flat.get(by_field)), _key(flat.get(x_field))
        by_keys[bk], x_keys[xk] = flat.get(by_field), flat.get(x_field)
        points.setdefault((bk, xk), []).append(r)

    mixed: Counter[tuple[str, ...]] = Counter()
    by_series: dict[str, list[dict[str, Any]]] = {}
    for (bk, xk), members in points.items():
        vals = [counted[str(r.id)] for r in members if str(r.id) in counted]
        other = varying_within([flats[str(r.id)] for r in members])
        if other:
            mixed[tuple(other)] += 1
        by_series.setdefault(bk, []).append(
            _point(x_keys[xk], vals, len(members), statistic, interval)
        )
    series = [
        {
            "by_value": _json_value(by_keys[bk]),
            "points": sorted(pts, key=lambda p: _sort_key(p["x"])),
        }
        for bk, pts in sorted(by_series.items(), key=lambda kv: _sort_key(by_keys[kv[0]]))
    ]
    return series, mixed


def _point(
    x: Any, vals: list[RunValue], n_total: int, statistic: str, interval: str
) -> dict[str, Any]:
    """One plotted point: the statistic over the counted runs at x, and which runs they are."""
    return {
        "x": _json_value(x),
        **aggregate(vals, statistic, interval),
        "n": len(vals),
        "n_total": n_total,
        "reached": (sum(not v.censored for v in vals) if statistic == "time_to_target" else None),
        "round": None,  # x=round|bytes|compute: the round the point is (`_curve_series`)
        "run_ids": [str(v.run.id) for v in vals],
        "values": [v.value for v in vals],
    }


def _warnings(
    series: list[dict[str, Any]],
    mixed: Counter[tuple[str, ...]],
    x_field: str,
    by_field: str,
    statistic: str,
    target: float | None,
) -> list[str]:
    """What a reader of the plot must know: pooled points, points without x, censored runs."""
    warnings = [
        f"{n} point(s) pool runs that also differ in {', '.join(f)}: pick one of them as `by`, "
        "or read the parallel-coordinates view"
        for f, n in sorted(mixed.items())
    ]
    xs = [p["x"] for s in series for p in s["points"]]
    no_x = sorted(
        {format_value(s["by_value"]) for s in series for p in s["points"] if p["x"] is None}
    )
    if no_x and any(v is not None for v in xs):
        warnings.append(
            f"{by_field}={', '.join(no_x)}: no {x_field} in these runs, so their points have "
            "x null (the dashboard draws them as a level line)"
        )
    if statistic == "time_to_target" and any(p["censored"] for s in series for p in s["points"]):
        warnings.append(
            f"some runs never reached {target:g}: their points' mean counts them at their last "
            "evaluated round (a lower bound, `censored`), with no interval"
        )
    return warnings


def _groups(
    flats: dict[str, dict[str, Any]],
    varying: list[str],
    counted: dict[str, RunValue],
    statistic: str,
    interval: str,
) -> list[dict[str, Any]]:
    """The statistic per group of runs that share every field but the seed (parallel coordinates)."""
    out = []
    for ids in group_items(flats).values():
        rep = flats[ids[0]]
        fields = {f: _json_value(rep.get(f)) for f in varying}
        vals = [counted[i] for i in ids if i in counted]
        agg = aggregate(vals, statistic, interval)
        out.append(
            {
                "label": group_label(fields),
                "fields": fields,
                "mean": agg["mean"],
                "std": agg["std"],
                "censored": agg["censored"],
                "n": len(vals),
                "n_total": len(ids),
            }
        )
    out.sort(key=lambda g: str(g["label"]))
    return out


CSV_COLUMNS = ("mean", "std", "lo", "hi", "n", "n_total", "reached", "censored")
#: The columns holding the statistic (mean, spread, the bar's ends): written in the unit the
#: Paper tables page shows, rounded as it shows them.
CSV_SCALED = frozenset({"mean", "std", "lo", "hi"})
CSV_DECIMALS = 2


def csv_unit(data: dict[str, Any]) -> tuple[str, float]:
    """(header suffix, factor): accuracies as percent (`mean_pct`), times to target in rounds
    (`mean_rounds`)."""
    return ("rounds", 1.0) if data.get("unit") == "round" else ("pct", 100.0)


def plot_csv(data: dict[str, Any]) -> str:
    """The plot data as CSV: one row per point. The statistic's columns carry their unit in the
    header (`mean_pct`: test accuracy in percent; `mean_rounds`) and are rounded to
    CSV_DECIMALS, as the Paper tables show them; counts stay counts."""
    suffix, factor = csv_unit(data)
    buf = io.StringIO()
    w = SafeWriter(buf)  # text a spreadsheet would run as a formula is quoted
    names = [f"{c}_{suffix}" if c in CSV_SCALED else c for c in CSV_COLUMNS]
    # x=round|bytes|compute: a point is a round, named beside its x (MB or s).
    curve = data.get("x_axis", "field") != "field"
    x_name = f"{data['x']}_{data['x_unit']}" if curve and data["x"] != "round" else data["x"]
    w.writerow(
        [data["by"], *(["round"] if curve else []), x_name, "statistic", "interval", *names]
        + ["run_ids"]
    )
    for s in data["series"]:
        for p in s["points"]:
            w.writerow(
                [
                    "" if s["by_value"] is None else s["by_value"],
                    *([p["round"]] if curve else []),
                    "" if p["x"] is None else p["x"],
                    data["statistic"],
                    data["interval"],
                    *(_csv_cell(p[c], factor if c in CSV_SCALED else None) for c in CSV_COLUMNS),
                    " ".join(p["run_ids"]),
                ]
            )
    return buf.getvalue()


def _csv_cell(value: Any, factor: float | None) -> Any:
    """A CSV cell: empty for None; the statistic scaled and rounded (a float's binary noise,
    75.94800000000001, never reaches the file)."""
    if value is None:
        return ""
    if factor is None or isinstance(value, bool):
        return value
    return round(float(value) * factor, CSV_DECIMALS)
