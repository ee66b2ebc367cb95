"""What the Compare page computes besides the statistics: names, trace styles, CSV tables.

Pure functions (no Streamlit, no network), so the page's choices can be tested:
runs are named for people (never by UUID), each curve is coloured by its algorithm
(one fixed colour per algorithm, whatever else the selection holds) and dashed by
the next field that differs (e.g. α), and every mode has a CSV.
"""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from plotly.colors import qualitative

from dashboard.charts import TraceStyle
from dashboard.compare_page.curves import ENDED, STOPPED
from fedgen.algorithms.registry import find_algorithm
from fedgen.specdict import differing_fields, flatten, format_value, get_dotted
from vocab.run_status import TERMINAL, RunStatus
from vocab.safe_csv import frame_csv
from vocab.schemas.results import ComparePublic
from vocab.schemas.runs import RunPublic

# One colour per algorithm, its declaration's (fedgen.algorithms.registry, plugins too); never
# reassigned by position in a selection, so FedGen is the same colour at every α and on every page.
_PALETTE: tuple[str, ...] = tuple(qualitative.D3)
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star")
ALGORITHM_FIELD = "algorithm.name"


def algorithm_color(name: str | None) -> str:
    """The fixed colour of an algorithm (an unknown name gets a stable colour from its hash)."""
    declared = find_algorithm(name)
    if declared is not None:
        return declared.colour
    return _PALETTE[zlib.crc32(str(name).encode()) % len(_PALETTE)]


def trace_styles(
    runs: list[RunPublic], names: dict[str, str], fields: list[str] | None = None
) -> dict[str, TraceStyle]:
    """Curve name -> its style: colour by algorithm, dash (and symbol) by what else differs.

    `names` maps run id -> curve name (a group label or a run name). The dash (and marker)
    follows the values of the differing `fields` other than the algorithm (default: every
    field that differs among `runs` except the seed), in sorted order, so "α=0.1" is solid
    and "α=1" dashed for every algorithm.
    """
    flats = {r.id: flatten(r.spec) for r in runs}
    varying = differing_fields(flats.values(), fields)
    rest = [f for f in varying if f != ALGORITHM_FIELD]
    first: dict[str, dict[str, Any]] = {}
    for rid, flat in flats.items():
        if rid in names:
            first.setdefault(names[rid], flat)
    keys = {name: tuple(format_value(f.get(k)) for k in rest) for name, f in first.items()}
    order = {k: i for i, k in enumerate(sorted(set(keys.values())))}
    return {
        name: TraceStyle(
            color=algorithm_color(flat.get(ALGORITHM_FIELD)),
            dash=DASHES[order[keys[name]] % len(DASHES)],
            symbol=SYMBOLS[order[keys[name]] // len(DASHES) % len(SYMBOLS)],
        )
        for name, flat in first.items()
    }


def _shade(color: str, step: int) -> str:
    """`color` (#rrggbb) darker (odd steps) or lighter (even steps), further each pair."""
    if step == 0 or not (color.startswith("#") and len(color) == 7):
        return color
    amount = 0.3 * ((step + 1) // 2)
    target = 0 if step % 2 else 255
    rgb = [int(color[i : i + 2], 16) for i in (1, 3, 5)]
    mixed = [round(c + (target - c) * min(amount, 0.9)) for c in rgb]
    return "#" + "".join(f"{c:02x}" for c in mixed)


def run_styles(runs: list[RunPublic], names: dict[str, str]) -> dict[str, TraceStyle]:
    """Run name -> a style of its own (No grouping): a shade of its algorithm's colour and a
    dash that no other run of that algorithm has, in the order of the runs' names.

    Seeds of one spec differ in nothing but the seed; `trace_styles` would draw them alike.
    """
    of_algorithm: dict[str, list[str]] = {}
    for run in runs:
        if run.id in names:
            algorithm = str(get_dotted(run.spec, ALGORITHM_FIELD, "?"))
            of_algorithm.setdefault(algorithm, []).append(names[run.id])
    out: dict[str, TraceStyle] = {}
    for algorithm, run_names_ in of_algorithm.items():
        for i, name in enumerate(sorted(set(run_names_))):
            out[name] = TraceStyle(
                color=_shade(algorithm_color(algorithm), i % 6),
                dash=DASHES[i % len(DASHES)],
                symbol=SYMBOLS[i // len(DASHES) % len(SYMBOLS)],
            )
    return out


def grouped_csv(agg: pd.DataFrame) -> str:
    """The mean ± std curves as CSV (group, round, mean, std, n, wall_s)."""
    return frame_csv(agg)


def runs_csv(long: pd.DataFrame, names: dict[str, str], metric: str) -> str:
    """One row per run and round: the run's name, its id, round, the metric, wall-clock."""
    from dashboard.compare_page.curves import X_COLUMNS

    out = pd.DataFrame(
        {
            "run": long["run_id"].map(lambda i: names.get(str(i), str(i))),
            "run_id": long["run_id"],
            "round": long["round"],
            metric: long["value"],
            # wall_s, and the cumulative MB / compute seconds where fetched (x = bytes|compute)
            **{c: long[c] for c in X_COLUMNS if c in long.columns},
        }
    )
    return frame_csv(out.sort_values(["run", "round"], kind="stable"))


# -- live comparisons: run states, the incremental cache, legend names -----------------
# ENDED: a run in one of these states never changes again, so its rounds are fetched once;
# STOPPED: ended without finishing, drawn as its own thin curve, left out of the bands.


@dataclass
class CachedRun:
    """One run's rounds fetched so far, merged from GET /compare answers (`merge_compare`):
    the Compare page's per-session cache entry. `gone`: the server no longer lists the run
    (`refresh_cache`); its status is then the end state it has in the trash."""

    id: str
    status: str | None = None
    current_round: int | None = None
    rounds_total: int | None = None
    rounds: list[int] = field(default_factory=list)
    metrics: dict[str, list[float | None]] = field(default_factory=dict)
    downsampled: bool = False
    gone: bool = False


@dataclass
class CompareCache:
    """The Compare page's cache in Streamlit state: run id -> `CachedRun`, for one `key` (the
    points and metrics fetched; another key starts it afresh)."""

    key: tuple[int, tuple[str, ...]]
    runs: dict[str, CachedRun] = field(default_factory=dict)


@dataclass
class CurveCounts:
    """How many runs one curve holds, by state (`status_counts`)."""

    runs: int = 0
    running: int = 0  # in flight, not queued
    queued: int = 0
    stopped: int = 0


def in_flight(status: str | None) -> bool:
    """Queued, claimed, running, cancelling, ... : anything that may still change."""
    return status not in ENDED


def fetch_plan(cache: dict[str, CachedRun], run_ids: list[str]) -> list[tuple[list[str], int]]:
    """The GET /compare requests that bring `cache` up to date: (run ids, since_round).

    Runs not cached yet, or cached without a round, are fetched whole (since_round -1);
    cached runs still in flight are asked only for their new rounds, in one request after
    the lowest last round among them (a run further on gets some rounds again: `merge_compare`
    drops them). Ended runs in the cache are never fetched again.
    """
    fresh: list[str] = []
    live: list[str] = []
    for rid in run_ids:
        entry = cache.get(rid)
        if entry is None or (not entry.rounds and in_flight(entry.status)):
            fresh.append(rid)
        elif in_flight(entry.status):
            live.append(rid)
    plan: list[tuple[list[str], int]] = []
    if fresh:
        plan.append((fresh, -1))
    if live:
        plan.append((live, min(int(cache[rid].rounds[-1]) for rid in live)))
    return plan


def merge_compare(cache: dict[str, CachedRun], answer: ComparePublic) -> None:
    """Merge a GET /compare answer (whole or `since_round`) into `cache`, in place.

    Per run: its status and current round are replaced, and only rounds after its last
    cached one are appended (so (run, round) is never doubled); a metric that first appears
    later is back-filled with None. Entries: `CachedRun`.
    """
    for run in answer.runs:
        entry = cache.setdefault(run.id, CachedRun(run.id))
        last = entry.rounds[-1] if entry.rounds else -1
        keep = [i for i, r in enumerate(run.rounds) if r > last]
        old_len = len(entry.rounds)
        entry.rounds = entry.rounds + [run.rounds[i] for i in keep]
        metrics = entry.metrics
        for name in set(metrics) | set(run.metrics):
            values = metrics.get(name, [None] * old_len)
            got = run.metrics.get(name)
            values = values + ([got[i] for i in keep] if got is not None else [None] * len(keep))
            metrics[name] = values
        entry.status = run.status
        entry.current_round = run.current_round
        entry.rounds_total = run.rounds_total
        entry.downsampled = entry.downsampled or run.downsampled


def refresh_cache(
    cache: dict[str, CachedRun],
    run_ids: list[str],
    fetch: Callable[[list[str], int, int], ComparePublic],
    max_points: int,
) -> int:
    """Bring `cache` up to date through `fetch(run ids, since_round, max_points)` (GET /compare).

    Whole fetches are downsampled to `max_points`; the new rounds of runs in flight come
    whole (a few per refresh). A run the server no longer lists is marked gone, with the end
    state it has in the trash (`gone_status`), so it is not asked for again. Returns the number
    of requests made.
    """
    plan = fetch_plan(cache, run_ids)
    for ids, since in plan:
        answer = fetch(ids, since, max_points if since < 0 else 0)
        merge_compare(cache, answer)
        listed = {r.id for r in answer.runs}
        for rid in ids:
            if rid not in listed:
                entry = cache.setdefault(rid, CachedRun(rid))
                entry.gone = True
                entry.status = gone_status(entry.status)
    return len(plan)


def gone_status(last: str | None) -> RunStatus:
    """The status of a run GET /compare stopped listing: it was moved to the trash (or purged
    from it), which cancels a run that had not ended (DELETE /runs/{id}, lab.trash_actions.delete_run:
    GET /trash lists it cancelled); an ended run keeps its end state. `last`: the status the
    cache held (None: never fetched)."""
    return RunStatus(last) if last in TERMINAL else RunStatus.CANCELLED


def cached_runs(cache: dict[str, CachedRun], run_ids: list[str]) -> list[CachedRun]:
    """The cached runs of `run_ids` (in that order), for `curves.compare_long`."""
    return [cache[rid] for rid in run_ids if rid in cache]


def status_counts(statuses: dict[str, str | None], names: dict[str, str]) -> dict[str, CurveCounts]:
    """Curve name -> how many of its runs are running (in flight, not queued), queued, stopped."""
    out: dict[str, CurveCounts] = {}
    for rid, status in statuses.items():
        c = out.setdefault(names.get(rid, rid), CurveCounts())
        c.runs += 1
        c.queued += int(status == RunStatus.QUEUED)
        c.running += int(in_flight(status) and status != RunStatus.QUEUED)
        c.stopped += int(status in STOPPED)
    return out


def group_legend(group: str, n: int, counts: CurveCounts | None) -> str:
    """ "algorithm=fedgen (n=3)", "... (n=2, 1 of 3 running, 1 queued)": a band's legend entry;
    "... (n = 1: no band)" for a group of one run (its line is that run, no mean ± std).

    n is the most runs any round's band holds (the hover gives each round's)."""
    extra = ""
    if counts and counts.running:
        extra += f", {counts.running} of {counts.runs} running"
    if counts and counts.queued:
        extra += f", {counts.queued} queued"
    return f"{group} ({'n = 1: no band' if n == 1 else f'n={n}'}{extra})"


def final_round(spec: dict[str, Any]) -> tuple[int, int] | None:
    """(final round, R) of a run's spec: R-1 under before_training (the official protocol
    never evaluates the model after the last aggregation), else R; None for a bad spec."""
    return _final_round(json.dumps(spec, sort_keys=True, default=str))


@functools.lru_cache(maxsize=4096)
def _final_round(spec_json: str) -> tuple[int, int] | None:
    from fedgen.fidelity import resolve
    from fedgen.spec import SpecError, parse_spec

    try:
        parsed = parse_spec(json.loads(spec_json))
    except (SpecError, ValueError):
        return None
    rounds = int(parsed.rounds)
    timing = resolve(parsed).eval_timing
    return (rounds - 1 if timing == "before_training" else rounds), rounds


def final_rounds(runs: list[RunPublic]) -> dict[str, tuple[int, int] | None]:
    """Run id -> (final round, R) (see `final_round`)."""
    return {r.id: final_round(r.spec) for r in runs}


def final_marks(
    finals: dict[str, tuple[int, int] | None], long: pd.DataFrame, x: str
) -> list[tuple[float, str]]:
    """A dotted line at the round "final" is taken at, when it is not the runs' last round
    (official protocol: R-1) and some curve has reached it; only on the round axis."""
    found = {f for f in finals.values() if f is not None}
    if x != "round" or len(found) != 1 or long.empty:
        return []
    at, last = found.pop()
    if at == last or int(long["round"].max()) < at:
        return []
    return [(float(at), f"final @{at}")]


def running_heads(
    long: pd.DataFrame,
    statuses: dict[str, str | None],
    run_names: dict[str, str],
    styles: dict[str, TraceStyle],
    names: dict[str, str],
    cache: dict[str, CachedRun],
) -> pd.DataFrame:
    """The latest point of each run in flight (for the chart's "running" markers)."""
    from dashboard.compare_page.curves import X_COLUMNS

    xs = [c for c in X_COLUMNS if c in long.columns]  # wall_s, and the cost axes fetched
    cols = ["run_id", "name", "color", "round", "rounds_total", *xs, "value"]
    live_ids = {i for i, s in statuses.items() if in_flight(s)}
    if not live_ids or long.empty:
        return pd.DataFrame(columns=cols)
    live = long[long["run_id"].astype(str).isin(live_ids)]
    if live.empty:
        return pd.DataFrame(columns=cols)
    last = live.sort_values("round").groupby("run_id", sort=False).tail(1).copy()
    ids = last["run_id"].astype(str)
    last["name"] = ids.map(lambda i: run_names.get(i, i))
    last["color"] = ids.map(lambda i: _color(styles.get(names.get(i, ""))))
    last["rounds_total"] = ids.map(lambda i: cache[i].rounds_total if i in cache else None)
    return last[cols].reset_index(drop=True)


def _color(style: TraceStyle | None) -> str:
    return style.color if style else "#444444"


def stopped_rows(
    long: pd.DataFrame, statuses: dict[str, str | None], run_names: dict[str, str]
) -> pd.DataFrame:
    """The rows of failed and cancelled runs, named, for their own dotted curves."""
    stopped = {i for i, s in statuses.items() if s in STOPPED}
    out = long[long["run_id"].astype(str).isin(stopped)].copy() if stopped else long.iloc[:0].copy()
    out["name"] = out["run_id"].astype(str).map(lambda i: run_names.get(i, i))
    out["status"] = out["run_id"].astype(str).map(lambda i: statuses.get(i))
    return out


def chart_caption(
    agg: pd.DataFrame | None,
    running: int,
    stopped: int,
    waiting: list[str],
    live: bool,
    marks: list[tuple[float, str]],
) -> str:
    """What the chart shows: who is in the bands (n per round), how many runs are running
    (with rounds), stopped (failed/cancelled) or not started, the final's round, refreshing."""
    from dashboard.compare_page.curves import n_changes

    parts = []
    if agg is not None:
        changes = n_changes(agg)
        parts.append(
            "Bands: mean ± std over the runs that reached each round, finished and running "
            "(running runs join each round as they reach it; ○ marks their latest round); "
            "failed and cancelled runs are drawn dotted, outside the bands. n per group: "
            + "; ".join(
                f"{g}: "
                + ", ".join(
                    f"n={n} from round {r}" for r, n in zip(d["round"], d["n"], strict=True)
                )
                for g, d in changes.groupby("group")
            )
            + "."
        )
        single = [str(g) for g, d in agg.groupby("group") if int(d["n"].max()) == 1]
        if single:
            parts.append(
                f"n = 1: no band for {'; '.join(single)} (one run each: its line is that run, "
                "not a mean ± std)."
            )
    elif running > 0 or stopped:
        parts.append(
            'Running runs are dashed and named "· running" (○ marks their latest round); failed and '
            "cancelled runs are dotted."
        )
    if running > 0:
        parts.append(f"{running} running.")
    if waiting:
        parts.append(
            f"Not started ({len(waiting)}): "
            + "; ".join(waiting[:8])
            + (" …" if len(waiting) > 8 else "")
            + "."
        )
    for at, _ in marks:
        parts.append(
            f'Dotted line: round {int(at)}, where "final" is taken (the last model the '
            "official protocol evaluates; it never evaluates the one after the last aggregation)."
        )
    if live:
        parts.append("Refreshes by itself while runs are queued or running.")
    return " ".join(parts)


def not_started(
    runs: list[RunPublic], cache: dict[str, CachedRun], names: dict[str, str]
) -> list[str]:
    """Names of the runs with no round yet (queued, or ended before round 0), with status."""
    out = []
    for run in runs:
        rid = run.id
        entry = cache.get(rid)
        if entry is not None and entry.rounds:
            continue
        status = (entry.status if entry else None) or run.status
        out.append(f"{names.get(rid, rid)} ({status})")
    return out


def mean_at_common_round(agg: pd.DataFrame) -> dict[str, float]:
    """Group -> its mean at the last round every group has reached (a fair "who leads now")."""
    if agg is None or agg.empty:
        return {}
    common = int(agg.groupby("group")["round"].max().min())
    at = agg[agg["round"] == common]
    return {str(g): float(m) for g, m in zip(at["group"], at["mean"], strict=True)}
