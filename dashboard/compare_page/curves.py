"""Pure curve logic of Compare: seed groups, mean ± std curves, smoothing, time-to-target.

Groups follow the one rule of `fedgen.specdict.group_items` (every spec field but the
seed, unless fields are chosen; then `group_warnings` names what still differs inside a
group). The Compare bands (`aggregate`) are live: each round's mean ± std is over the runs
that reached that round, succeeded or still in flight (n per round, `n_changes`); failed
and cancelled runs are left out of them (`STOPPED`). The per-run statistics (time to
target, the sweep tables) count finished (succeeded) runs only; the others are counted
apart (`unfinished`), never in a mean ± std.

"final" has one meaning (`fedgen.stats`): the accuracy of the last round the run's protocol
evaluates, named with its round when that is not the run's last round ("final @199");
"best" likewise (`dashboard.sweep_tables.statistic_label`). The paper tables (Table 1,
Table 3, their LaTeX and the payloads they read) are `dashboard.sweep_tables`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import pandas as pd

from fedgen.cost import MB
from fedgen.metric_names import ROUND_TIME
from fedgen.specdict import (
    differing_fields,
    flatten,
    group_fields,
    group_items,
    group_label,
    varying_within,
)
from vocab.run_status import TERMINAL, RunStatus
from vocab.schemas.runs import RunPublic

# A run that will not change again: an end state (a run the server no longer lists has one:
# `compare_view.gone_status`).
ENDED: frozenset[RunStatus] = frozenset(TERMINAL)
# Ended without finishing: drawn on Compare, but never inside a band.
STOPPED: frozenset[RunStatus] = ENDED - {RunStatus.SUCCEEDED}


class Curve(Protocol):
    """One run's curves as GET /compare answers them (`CompareRun`) or the Compare page caches
    them (`compare_view.CachedRun`)."""

    @property
    def id(self) -> str: ...
    @property
    def status(self) -> str | None: ...
    @property
    def rounds(self) -> Sequence[int]: ...
    @property
    def metrics(self) -> Mapping[str, Sequence[float | None]]: ...


def compare_long(runs: Iterable[Curve], metric: str = "test_acc") -> pd.DataFrame:
    """The Compare cache's runs (`compare_view.cached_runs`) as a long frame (run_id,
    round, value, wall_s, status) of one metric.

    `wall_s` is the cumulative `time_total_ms` in seconds; `mb` and `compute_s`, where the
    payload holds their metrics, the cumulative MB communicated and compute seconds
    (`fedgen.cost`, docs/metrics.md: Cost). When the server has
    downsampled, each kept point stands for the rounds since the previous one. `status`
    is the run's: the Compare bands (`aggregate`) count succeeded and running runs, the
    per-run statistics (time to target) succeeded runs only.
    """
    frames = []
    for run in runs:
        rounds = np.asarray(run.rounds, dtype=float)
        values = run.metrics.get(metric)
        if values is None or len(values) != len(rounds) or len(rounds) == 0:
            continue
        total = run.metrics.get(ROUND_TIME)
        if total is not None and len(total) == len(rounds):
            t = np.nan_to_num(np.asarray(total, dtype=float))
            gaps = np.diff(rounds, prepend=rounds[0] - 1)
            wall = np.cumsum(t * np.maximum(gaps, 1)) / 1000.0
        else:
            wall = np.full(len(rounds), np.nan)
        frame = pd.DataFrame(
            {
                "run_id": run.id,
                "round": rounds.astype(int),
                "value": np.asarray([np.nan if v is None else v for v in values], dtype=float),
                "wall_s": wall,
                "status": run.status,
            }
        )
        frames.append(frame.assign(**_cost_axes(run.metrics, rounds)))
    if not frames:
        return pd.DataFrame(columns=["run_id", "round", "value", "wall_s", "status"])
    return pd.concat(frames, ignore_index=True)


# The cost x axes (fedgen.cost): column -> the per-round metrics summed into it, and the scale.
COST_AXES: dict[str, tuple[tuple[str, str], float]] = {
    "mb": (("bytes_up", "bytes_down"), MB),
    "compute_s": (("time_train_ms", "time_server_ms"), 1e3),
}
# The x columns a long frame may carry beside the round: training time, then the costs.
X_COLUMNS = ("wall_s", *COST_AXES)


def _cost_axes(
    metrics: Mapping[str, Sequence[float | None]], rounds: np.ndarray
) -> dict[str, np.ndarray]:
    """Cumulative MB (up + down) and compute seconds (clients' training + server) of one
    run's rounds, for the metrics that were fetched (none: no column). Round 0 adds nothing;
    a downsampled point stands for the rounds since the previous one, as for wall_s."""
    out: dict[str, np.ndarray] = {}
    for column, (names, scale) in COST_AXES.items():
        series = [metrics.get(n) for n in names]
        if any(v is None or len(v) != len(rounds) for v in series):
            continue
        per_round = sum(
            np.nan_to_num(np.asarray([np.nan if x is None else x for x in v], dtype=float))
            for v in series
            if v is not None
        )
        gaps = np.diff(rounds, prepend=rounds[0] - 1)
        out[column] = np.cumsum(np.asarray(per_round) * np.maximum(gaps, 1)) / scale
    return out


def spec_fields(run: RunPublic) -> dict[str, Any]:
    """A run's spec flattened to dotted fields."""
    return flatten(run.spec)


def groupable_fields(runs: list[RunPublic], varying_only: bool = False) -> list[str]:
    """Dotted spec fields one can group by (never the seed); optionally only those that differ."""
    flats = [spec_fields(run) for run in runs]
    return differing_fields(flats) if varying_only else group_fields(flats)


def group_labels(runs: list[RunPublic], by: list[str] | None = None) -> dict[str, str]:
    """Run id -> group label. Default: group by every spec field except the seed.

    Runs share a group when all `by` fields are equal. Labels name only fields whose
    values differ among the runs that have them (so FedGen's own parameters do not
    clutter a FedAvg-vs-FedGen label); the algorithm comes first.
    """
    flat = {r.id: spec_fields(r) for r in runs}
    keyed = group_items(flat, by)
    shown = differing_fields(flat.values(), by)
    out: dict[str, str] = {}
    seen: list[str] = []
    for ids in keyed.values():
        f = flat[ids[0]]
        # An unset field (None) names nothing: one run with data.root set must not put
        # "data.root=None" into every other run's label.
        label = group_label({k: f[k] for k in shown if f.get(k) is not None})
        if label in seen:
            label += f" #{len(seen) + 1}"
        seen.append(label)
        out.update(dict.fromkeys(ids, label))
    return out


def group_warnings(runs: list[RunPublic], by: list[str] | None = None) -> dict[str, list[str]]:
    """Group label -> the fields its runs still differ in (only groups that mix; {} by default).

    The Compare page shows these as a warning when the user picks the fields to group by.
    """
    if by is None:
        return {}
    labels = group_labels(runs, by)
    members: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        members.setdefault(labels[r.id], []).append(spec_fields(r))
    out = {label: varying_within(flats) for label, flats in members.items()}
    return {label: fields for label, fields in out.items() if fields}


def finished_only(long: pd.DataFrame) -> pd.DataFrame:
    """The rows of succeeded runs (all rows when the frame has no `status` column)."""
    if "status" not in long.columns or long.empty:
        return long
    return long[long["status"] == RunStatus.SUCCEEDED]


def in_bands(long: pd.DataFrame) -> pd.DataFrame:
    """The rows the Compare bands count: succeeded and in-flight runs (not failed/cancelled)."""
    if "status" not in long.columns or long.empty:
        return long
    return long[~long["status"].isin(STOPPED)]


def unfinished(long: pd.DataFrame, group_col: str = "group") -> pd.DataFrame:
    """Per group and status: runs that are not counted (queued, running, failed, cancelled)."""
    cols = [group_col, "status", "runs"]
    if "status" not in long.columns or long.empty:
        return pd.DataFrame(columns=cols)
    rest = long[long["status"] != RunStatus.SUCCEEDED].drop_duplicates("run_id")
    if rest.empty:
        return pd.DataFrame(columns=cols)
    return rest.groupby([group_col, "status"]).size().rename("runs").reset_index()[cols]


def ema(values: np.ndarray | list[float], weight: float) -> np.ndarray:
    """TensorBoard's debiased exponential moving average; NaNs are carried, not smoothed."""
    arr = np.asarray(values, dtype=float)
    if weight <= 0 or arr.size == 0:
        return arr
    out = np.empty_like(arr)
    last, num = 0.0, 0
    for i, v in enumerate(arr):
        if math.isnan(v):
            out[i] = v
            continue
        last = last * weight + (1 - weight) * v
        num += 1
        out[i] = last / (1 - weight**num)
    return out


def smooth(long: pd.DataFrame, weight: float, column: str = "value") -> pd.DataFrame:
    """Apply `ema` to each run's curve (ordered by round)."""
    if weight <= 0 or long.empty:
        return long
    out = long.sort_values(["run_id", "round"]).copy()
    out[column] = out.groupby("run_id", sort=False)[column].transform(
        lambda s: ema(s.to_numpy(), weight)
    )
    return out


def aggregate(long: pd.DataFrame, group_col: str = "group") -> pd.DataFrame:
    """Per group and round: mean, population std (0 for one run), n, and mean wall-clock.

    Succeeded and in-flight runs count, failed and cancelled ones do not (`in_bands`); a
    round's band uses only the runs that reached that round, so a running run joins each
    round as it lands: `n` is per round, and `n_changes` says where it changes.
    """
    xs = [c for c in X_COLUMNS if c in long.columns]  # wall_s, and the cost axes fetched
    cols = ["group", "round", "mean", "std", "n", *xs]
    long = in_bands(long)
    if long.empty:
        return pd.DataFrame(columns=cols)
    g = long.groupby([group_col, "round"])
    out = pd.DataFrame(
        {
            "mean": g["value"].mean(),
            "std": g["value"].std(ddof=0).fillna(0.0),
            "n": g["value"].count(),
            **{c: g[c].mean() for c in xs},
        }
    ).reset_index()
    return out.rename(columns={group_col: "group"})[cols]


def n_changes(agg: pd.DataFrame) -> pd.DataFrame:
    """Rows of `aggregate` where a group's n differs from its previous round (and its first round).

    The chart annotates these ("n=2 from round 120") so a kink where a seed drops out is
    not read as a change in the algorithm.
    """
    cols = ["group", "round", "n", "wall_s"]
    if agg.empty:
        return pd.DataFrame(columns=cols)
    a = agg.sort_values(["group", "round"])
    prev = a.groupby("group")["n"].shift()
    return a[prev.isna() | (prev != a["n"])][cols].reset_index(drop=True)


def _censored_median(times: list[float], limit: float) -> tuple[float, bool]:
    """Median of event times where inf = not reached (censored beyond `limit`).

    Returns (median, censored): censored when the median falls on a seed that never
    reached the target; the value is then `limit` and reads "> limit".
    """
    ordered = sorted(times)
    k = len(ordered)
    mid = ordered[(k - 1) // 2 : k // 2 + 1]
    if any(math.isinf(v) for v in mid):
        return limit, True
    return float(np.mean(mid)), False


def _fmt_median(value: float, censored: bool, digits: int) -> str:
    if math.isnan(value):
        return "–"
    shown = f"{value:.{digits}f}"
    return f"> {shown}" if censored else shown


def _first_hits(gdf: pd.DataFrame, target: float) -> tuple[list[float], list[float], float, float]:
    """Per run of `gdf`: the first round and seconds at `target` (inf: never reached), and
    the latest last round and seconds of the runs that never reached it (the censoring)."""
    rounds: list[float] = []
    secs: list[float] = []
    last_round, last_sec = 0.0, 0.0
    for _, rdf in gdf.groupby("run_id"):
        rdf = rdf.sort_values("round")
        hit = rdf[rdf["value"] >= target]
        if hit.empty:
            rounds.append(math.inf)
            secs.append(math.inf)
            last_round = max(last_round, float(rdf["round"].iloc[-1]))
            last_sec = max(last_sec, float(np.nan_to_num(rdf["wall_s"].iloc[-1])))
        else:
            rounds.append(float(hit["round"].iloc[0]))
            secs.append(float(hit["wall_s"].iloc[0]))
    return rounds, secs, last_round, last_sec


def time_to_target(
    long: pd.DataFrame,
    target: float,
    group_col: str = "group",
    members: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per group: "reached k of n", and the median first round / seconds to reach `target`.

    n counts finished runs; a run that never reached the target is censored at its last
    round (and its total seconds), not dropped: the median counts it as beyond, and a
    median that falls on such a run reads "> R" (`round_censored`). Never a mean over the
    seeds that happened to reach the target. Unfinished runs (queued, running, failed,
    cancelled) are counted in `unfinished`, from `members` (run_id, group, status of every
    run, those with no round yet included) when given, else from `long`.
    """
    cols = [
        "group",
        "runs",
        "reached",
        "reached_text",
        "round_median",
        "round_median_text",
        "round_censored",
        "seconds_median",
        "seconds_median_text",
        "unfinished",
    ]
    if long.empty:
        return pd.DataFrame(columns=cols)
    rest = unfinished(members if members is not None else long, group_col)
    done = finished_only(long)
    rows = []
    for group in sorted(long[group_col].unique(), key=str):
        rounds, secs, last_round, last_sec = _first_hits(done[done[group_col] == group], target)
        n = len(rounds)
        reached = sum(1 for r in rounds if not math.isinf(r))
        r_med, r_cens = _censored_median(rounds, last_round) if n else (math.nan, False)
        known = [x for x in secs if not math.isnan(x)]
        s_med, s_cens = (
            _censored_median(known, last_sec) if len(known) == n and n else (math.nan, False)
        )
        n_rest = int(rest.loc[rest[group_col] == group, "runs"].sum()) if not rest.empty else 0
        rows.append(
            {
                "group": group,
                "runs": n,
                "reached": reached,
                "reached_text": f"{reached} of {n}",
                "round_median": r_med,
                "round_median_text": _fmt_median(r_med, r_cens, 0),
                "round_censored": r_cens,
                "seconds_median": s_med,
                "seconds_median_text": _fmt_median(s_med, s_cens, 1),
                "unfinished": n_rest,
            }
        )
    return pd.DataFrame(rows, columns=cols)
