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
from typing import Any

import pandas as pd
from plotly.colors import qualitative

from api.schemas.runs import RunPublic
from dashboard.tables import ENDED, STOPPED, group_labels
from fedgen.algorithms.registry import find_algorithm
from fedgen.csv_cells import frame_csv
from fedgen.specdict import differing_fields, flatten, format_value, get_dotted, group_label
from fedgen.status import RunStatus

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


def run_names(runs: list[RunPublic]) -> dict[str, str]:
    """Run id -> a name that tells the run apart from the others listed: the fields that differ
    among `runs` (Compare's group labels, `group_labels`) and the seed, as the ungrouped legend
    names runs (`seed_names`), e.g. "algorithm=fedgen, algorithm.gen_batch_size=32, seed=0".

    Every name-a-run place (the Runs table, the run pickers, Compare's run list) uses this one.
    When nothing but the seed differs (one run, or seeds of one spec) the algorithm and the
    dataset lead, so a name never says only "seed=0"; " #2" marks a repeated spec.
    """
    groups = group_labels(runs)
    if all(g == "all" for g in groups.values()):
        groups = {
            r.id: group_label(
                {f: get_dotted(r.spec, f, "?") for f in ("algorithm.name", "data.name")}
            )
            for r in runs
        }
    return seed_names(runs, groups)


def seed_names(runs: list[RunPublic], groups: dict[str, str]) -> dict[str, str]:
    """Ungrouped legend names: the group's differing fields and the seed, unique per run."""
    out: dict[str, str] = {}
    taken: dict[str, int] = {}
    for run in runs:
        rid = run.id
        group = groups.get(rid, "all")
        seed = get_dotted(run.spec, "seed", "?")
        name = f"seed={seed}" if group == "all" else f"{group}, seed={seed}"
        taken[name] = taken.get(name, 0) + 1
        out[rid] = name if taken[name] == 1 else f"{name} #{taken[name]}"
    return out


def trace_styles(
    runs: list[RunPublic], names: dict[str, str], fields: list[str] | None = None
) -> dict[str, dict[str, str]]:
    """Curve name -> {"color", "dash", "symbol"}: colour by algorithm, dash by what else differs.

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
        name: {
            "color": algorithm_color(flat.get(ALGORITHM_FIELD)),
            "dash": DASHES[order[keys[name]] % len(DASHES)],
            "symbol": SYMBOLS[order[keys[name]] // len(DASHES) % len(SYMBOLS)],
        }
        for name, flat in first.items()
    }


def grouped_csv(agg: pd.DataFrame) -> str:
    """The mean ± std curves as CSV (group, round, mean, std, n, wall_s)."""
    return frame_csv(agg)


def runs_csv(long: pd.DataFrame, names: dict[str, str], metric: str) -> str:
    """One row per run and round: the run's name, its id, round, the metric, wall-clock."""
    out = pd.DataFrame(
        {
            "run": long["run_id"].map(lambda i: names.get(str(i), str(i))),
            "run_id": long["run_id"],
            "round": long["round"],
            metric: long["value"],
            "wall_s": long["wall_s"],
        }
    )
    return frame_csv(out.sort_values(["run", "round"], kind="stable"))


# -- live comparisons: run states, the incremental cache, legend names -----------------
# ENDED: a run in one of these states never changes again, so its rounds are fetched once;
# STOPPED: ended without finishing, drawn as its own thin curve, left out of the bands.


def in_flight(status: str | None) -> bool:
    """Queued, claimed, running, cancelling, ... : anything that may still change."""
    return status not in ENDED


def fetch_plan(cache: dict[str, dict[str, Any]], run_ids: list[str]) -> list[tuple[list[str], int]]:
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
        if entry is None or (not entry["rounds"] and in_flight(entry["status"])):
            fresh.append(rid)
        elif in_flight(entry["status"]):
            live.append(rid)
    plan: list[tuple[list[str], int]] = []
    if fresh:
        plan.append((fresh, -1))
    if live:
        plan.append((live, min(int(cache[rid]["rounds"][-1]) for rid in live)))
    return plan


def merge_compare(cache: dict[str, dict[str, Any]], payload: dict[str, Any]) -> None:
    """Merge a GET /compare answer (whole or `since_round`) into `cache`, in place.

    Per run: its status and current round are replaced, and only rounds after its last
    cached one are appended (so (run, round) is never doubled); a metric that first appears
    later is back-filled with None. Entries: {"status", "current_round", "rounds_total",
    "rounds", "metrics", "downsampled"}.
    """
    for run in payload.get("runs") or []:
        rid = str(run.get("id"))
        entry = cache.setdefault(
            rid, {"rounds": [], "metrics": {}, "downsampled": False, "status": None}
        )
        rounds = list(run.get("rounds") or [])
        last = entry["rounds"][-1] if entry["rounds"] else -1
        keep = [i for i, r in enumerate(rounds) if r > last]
        old_len = len(entry["rounds"])
        entry["rounds"] = entry["rounds"] + [rounds[i] for i in keep]
        metrics: dict[str, list[Any]] = entry["metrics"]
        new = run.get("metrics") or {}
        for name in set(metrics) | set(new):
            values = metrics.get(name, [None] * old_len)
            got = new.get(name)
            values = values + ([got[i] for i in keep] if got is not None else [None] * len(keep))
            metrics[name] = values
        entry["status"] = run.get("status")
        entry["current_round"] = run.get("current_round")
        entry["rounds_total"] = run.get("rounds_total")
        entry["downsampled"] = bool(entry["downsampled"] or run.get("downsampled"))


def refresh_cache(
    cache: dict[str, dict[str, Any]],
    run_ids: list[str],
    fetch: Callable[[list[str], int, int], dict[str, Any]],
    max_points: int,
) -> int:
    """Bring `cache` up to date through `fetch(run ids, since_round, max_points)` (GET /compare).

    Whole fetches are downsampled to `max_points`; the new rounds of runs in flight come
    whole (a few per refresh). A run the server no longer lists is marked deleted, so it is
    not asked for again. Returns the number of requests made.
    """
    plan = fetch_plan(cache, run_ids)
    for ids, since in plan:
        payload = fetch(ids, since, max_points if since < 0 else 0)
        merge_compare(cache, payload)
        listed = {str(r.get("id")) for r in payload.get("runs") or []}
        for rid in ids:
            if rid not in listed:
                cache.setdefault(rid, {"rounds": [], "metrics": {}, "downsampled": False})
                cache[rid]["status"] = "deleted"
    return len(plan)


def cached_payload(cache: dict[str, dict[str, Any]], run_ids: list[str]) -> dict[str, Any]:
    """The cache as a GET /compare body for `run_ids` (in that order), for `compare_long`."""
    return {"runs": [{"id": rid, **cache[rid]} for rid in run_ids if rid in cache]}


def status_counts(
    statuses: dict[str, str | None], names: dict[str, str]
) -> dict[str, dict[str, int]]:
    """Curve name -> {"runs", "running" (in flight, not queued), "queued", "stopped"}."""
    out: dict[str, dict[str, int]] = {}
    for rid, status in statuses.items():
        c = out.setdefault(
            names.get(rid, rid), {"runs": 0, "running": 0, "queued": 0, "stopped": 0}
        )
        c["runs"] += 1
        c["queued"] += int(status == RunStatus.QUEUED)
        c["running"] += int(in_flight(status) and status != RunStatus.QUEUED)
        c["stopped"] += int(status in STOPPED)
    return out


def group_legend(group: str, n: int, counts: dict[str, int] | None) -> str:
    """ "algorithm=fedgen (n=3)", "... (n=2, 1 of 3 running, 1 queued)": a band's legend entry.

    n is the most runs any round's band holds (the hover gives each round's)."""
    extra = ""
    if counts and counts["running"]:
        extra += f", {counts['running']} of {counts['runs']} running"
    if counts and counts.get("queued"):
        extra += f", {counts['queued']} queued"
    return f"{group} (n={n}{extra})"


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
    styles: dict[str, dict[str, str]],
    names: dict[str, str],
    cache: dict[str, dict[str, Any]],
) -> pd.DataFrame:
    """The latest point of each run in flight (for the chart's "running" markers)."""
    cols = ["run_id", "name", "color", "round", "rounds_total", "wall_s", "value"]
    live_ids = {i for i, s in statuses.items() if in_flight(s)}
    if not live_ids or long.empty:
        return pd.DataFrame(columns=cols)
    live = long[long["run_id"].astype(str).isin(live_ids)]
    if live.empty:
        return pd.DataFrame(columns=cols)
    last = live.sort_values("round").groupby("run_id", sort=False).tail(1).copy()
    ids = last["run_id"].astype(str)
    last["name"] = ids.map(lambda i: run_names.get(i, i))
    last["color"] = ids.map(lambda i: styles.get(names.get(i, ""), {}).get("color", "#444444"))
    last["rounds_total"] = ids.map(lambda i: (cache.get(i) or {}).get("rounds_total"))
    return last[cols].reset_index(drop=True)


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
    from dashboard.tables import n_changes

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
    runs: list[RunPublic], cache: dict[str, dict[str, Any]], names: dict[str, str]
) -> list[str]:
    """Names of the runs with no round yet (queued, or ended before round 0), with status."""
    out = []
    for run in runs:
        rid = run.id
        entry = cache.get(rid)
        if entry is not None and entry["rounds"]:
            continue
        status = (entry or {}).get("status") or run.status
        out.append(f"{names.get(rid, rid)} ({status})")
    return out


def mean_at_common_round(agg: pd.DataFrame) -> dict[str, float]:
    """Group -> its mean at the last round every group has reached (a fair "who leads now")."""
    if agg is None or agg.empty:
        return {}
    common = int(agg.groupby("group")["round"].max().min())
    at = agg[agg["round"] == common]
    return {str(g): float(m) for g, m in zip(at["group"], at["mean"], strict=True)}
