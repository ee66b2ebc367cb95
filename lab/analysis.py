"""Aggregations the server reports: sweep summaries, the timing table, the difference of two groups.

Every aggregate groups runs with one rule, `fedgen.specdict.group_items` (runs that share
every spec field but the seed), unless the caller picks fields; then each group lists the
fields that still differ inside it (`varying`) and the response carries a warning.

Only finished runs count: n is the number of succeeded runs; queued, running, failed and
cancelled runs are counted and listed apart (`excluded`), never inside mean ± std.
"""

from __future__ import annotations

import io
import math
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy.orm import Session

from fedgen.algorithms.registry import find_algorithm
from fedgen.csv_cells import SafeWriter
from fedgen.specdict import (
    differing_fields,
    group_items,
    group_key,
    group_label,
    varying_within,
)
from fedgen.stats import (
    CurveStatistic,
    CurveSummary,
    common_final_round,
    curve_statistic,
    mean_std,
    pooled_top5,
    reported_curve,
    summarize_curve,
)
from fedgen.status import RunStatus
from lab import curve_cache, spec_cache
from lab.models import Run
from lab.repository import metrics as metrics_repo
from lab.repository import sweeps as sweeps_repo


def _nan_none(x: float) -> float | None:
    return None if math.isnan(x) else x


def flat_spec(run: Run) -> dict[str, Any]:
    """A run's spec, canonical (every default written out) and flattened to dotted fields."""
    flat = spec_cache.flat_spec(run.spec)
    # None: a row from an older schema, a group of its own.
    return {"invalid": str(run.id)} if flat is None else flat


@dataclass
class RunGroup:
    """Runs that form one aggregate: `fields` (what tells it from the other groups), members."""

    key: str
    members: list[Run]
    fields: dict[str, Any]
    varying: list[str] = field(default_factory=list)  # fields that differ inside the group

    @property
    def label(self) -> str:
        """ "algorithm=fedgen, alpha=0.1" ("all" when nothing differs)."""
        return group_label(self.fields)

    @property
    def finished(self) -> list[Run]:
        """The members that count (succeeded)."""
        return [r for r in self.members if r.status == RunStatus.SUCCEEDED]

    def excluded(self) -> dict[str, Any]:
        """Members that do not count, by status: counts and ids."""
        out = [r for r in self.members if r.status != RunStatus.SUCCEEDED]
        return {
            "counts": dict(Counter(r.status for r in out)),
            "run_ids": {
                s: [str(r.id) for r in out if r.status == s] for s in {r.status for r in out}
            },
        }


def group_runs(runs: list[Run], by: list[str] | None = None) -> list[RunGroup]:
    """The runs grouped by every spec field but the seed (or by `by`), groups sorted by label."""
    flats = {str(r.id): flat_spec(r) for r in runs}
    by_id = {str(r.id): r for r in runs}
    keyed = group_items(flats, by)
    reps = {k: flats[ids[0]] for k, ids in keyed.items()}
    shown = differing_fields(reps.values(), by)
    groups = []
    for key, ids in keyed.items():
        rep = reps[key]
        fields = {f: rep[f] for f in shown if f in rep}
        varying = varying_within([flats[i] for i in ids]) if by is not None else []
        groups.append(RunGroup(key, [by_id[i] for i in ids], fields, varying))
    groups.sort(key=lambda g: g.label)
    return groups


def warnings_of(groups: list[RunGroup]) -> list[str]:
    """One line per group whose runs still differ in some field (only with chosen fields)."""
    return [
        f"group {g.label!r} mixes runs that differ in {', '.join(g.varying)}"
        for g in groups
        if g.varying
    ]


# -- sweep summary -------------------------------------------------------------------
def sweep_summary(
    session: Session, sweep_id: uuid.UUID, by: list[str] | None = None
) -> dict[str, Any]:
    """One row per group: n finished runs, final, best and top-5 accuracy mean ± std over them.

    "final" is the one meaning (`fedgen.stats`): the last round the run's protocol evaluates,
    `final_round` (R-1 under before_training), named in `final_label` ("final @29") when it is
    not the runs' last round `last_round`; "best" is the highest accuracy over the same rounds.
    Returns {"group_by", "groups", "warnings"}; each group lists its unfinished runs apart.
    """
    runs = sweeps_repo.runs_of_sweep(session, sweep_id, analysis=True)
    groups = group_runs(runs, by)
    curves = curve_cache.acc_curves(session, groups_finished(groups))
    rows = [_summary_row(g, _counted(g, curves)) for g in groups]
    return {"group_by": by, "groups": rows, "warnings": warnings_of(groups)}


@dataclass
class _Counted:
    """A group's runs that count (succeeded, with a curve), each with what its profile reports."""

    runs: list[Run] = field(default_factory=list)
    reported: list[list[float]] = field(default_factory=list)  # the curve its profile reports
    summaries: list[CurveSummary] = field(default_factory=list)
    last_rounds: list[int] = field(default_factory=list)  # each run's R


def _counted(group: RunGroup, curves: dict[uuid.UUID, list[float]]) -> _Counted:
    """The group's succeeded runs that have a curve, read under each run's fidelity profile
    (official: the post-final model is not among the reported rounds)."""
    out = _Counted()
    for r in group.finished:
        if not curves.get(r.id):
            continue
        timing, rounds = spec_cache.eval_profile(r.spec)
        out.reported.append(reported_curve(curves[r.id], timing, rounds))
        out.summaries.append(summarize_curve(curves[r.id], timing, rounds))
        out.runs.append(r)
        out.last_rounds.append(rounds)
    return out


def _summary_row(g: RunGroup, counted: _Counted) -> dict[str, Any]:
    """One group's row of the sweep summary (its CSV columns: `summary_csv`)."""
    finals = counted.summaries
    final_m, final_s = mean_std([c.final for c in finals])
    best_m, best_s = mean_std([c.best for c in finals])
    top_m, top_s = pooled_top5(counted.reported)
    named = statistic_round("final", finals, counted.last_rounds)
    best_rounds = {c.best_round for c in finals}
    return {
        "label": g.label,
        "fields": g.fields,
        "varying": g.varying,
        "n": len(counted.runs),
        "n_succeeded": len(counted.runs),
        "n_total": len(g.members),
        "status_counts": dict(Counter(r.status for r in g.members)),
        "excluded": g.excluded(),
        "seeds": sorted(int(r.spec.get("seed", 0)) for r in counted.runs),
        "final_mean": _nan_none(final_m),
        "final_std": _nan_none(final_s),
        # The round the final figures are from (R-1 under before_training, where the
        # official code never evaluates round R); None if the members differ.
        "final_round": common_final_round(finals),
        # The runs' R: final_round differs from it under before_training ("final @R-1").
        "last_round": named["last_round"],
        "final_label": named["statistic_label"],
        # Best: each run's highest evaluated accuracy (same rounds as final), mean ± std;
        # best_round only when every run peaked at one round.
        "best_mean": _nan_none(best_m),
        "best_std": _nan_none(best_s),
        "best_round": best_rounds.pop() if len(best_rounds) == 1 else None,
        "top5_mean": _nan_none(top_m),
        "top5_std": _nan_none(top_s),
        "run_ids": [str(r.id) for r in counted.runs],
        "all_run_ids": [str(r.id) for r in g.members],
    }


def groups_finished(groups: list[RunGroup]) -> list[Run]:
    """Every finished run of the groups."""
    return [r for g in groups for r in g.finished]


def summary_csv(rows: list[dict[str, Any]]) -> str:
    """The summary as CSV: one line per group."""
    field_names = sorted({f for r in rows for f in r["fields"]})
    buf = io.StringIO()
    w = SafeWriter(buf)  # text a spreadsheet would run as a formula is quoted
    cols = [
        "label",
        *field_names,
        "n",
        "n_succeeded",
        "n_total",
        "final_mean",
        "final_std",
        "final_round",
        "last_round",
        "best_mean",
        "best_std",
        "top5_mean",
        "top5_std",
    ]
    w.writerow([*cols, "varying"])
    for r in rows:
        w.writerow(
            [
                r["label"],
                *(r["fields"].get(f) for f in field_names),
                *(r[c] if r[c] is not None else "" for c in cols[1 + len(field_names) :]),
                " ".join(r["varying"]),
            ]
        )
    return buf.getvalue()


# -- timing (Table 3) ----------------------------------------------------------------
# The setting a timing row was measured in (the minimum; the group key holds the rest).
TIMING_SETTING = (
    "data.name",
    "model.name",
    "batch_size",
    "local_steps",
    "users_per_round",
    "device",
)


def setting_key(flat: dict[str, Any]) -> str:
    """The group key without the algorithm: rows of one setting share it (FedAvg is the reference)."""
    return group_key({k: v for k, v in flat.items() if not k.startswith("algorithm.")})


def timing_table(
    session: Session,
    sweep_id: uuid.UUID | None,
    algorithm: str | None,
    metric: str = "time_user_ms",
) -> dict[str, Any]:
    """ms per user local update, mean ± std over the rounds of finished runs, one row per group.

    Runs are grouped by every spec field but the seed, so a row never mixes datasets,
    models, batch sizes, devices or FedGen's B_G; each row carries that setting.
    """
    runs = sweeps_repo.runs_for_timing(session, sweep_id, algorithm)
    groups = group_runs(runs)
    values = metrics_repo.metric_values(session, [r.id for r in groups_finished(groups)], metric)
    rows: list[dict[str, Any]] = []
    for g in groups:
        timed = [r for r in g.finished if values.get(r.id)]
        flat = flat_spec(g.members[0])
        setting = {f: flat.get(f) for f in TIMING_SETTING}
        alg = flat.get("algorithm.name")
        decl = find_algorithm(alg)
        for told_apart_by in decl.timing_fields if decl is not None else ():
            setting[told_apart_by] = flat.get(told_apart_by)
        pooled = [v for r in timed for v in values[r.id]]
        m, s = mean_std(pooled)
        rows.append(
            {
                "label": g.label,
                "fields": g.fields,
                "algorithm": alg,
                "gen_batch_size": setting.get("algorithm.gen_batch_size"),
                "setting": setting,
                "setting_key": setting_key(flat),
                "n": len(timed),
                "n_runs": len(timed),
                "n_rounds": len(pooled),
                "mean_ms": _nan_none(m),
                "std_ms": _nan_none(s),
                "excluded": g.excluded(),
                "run_ids": [str(r.id) for r in timed],
            }
        )
    settings = {r["setting_key"] for r in rows}
    return {
        "metric": metric,
        "rows": rows,
        "settings": len(settings),
        "warnings": (
            [f"{len(settings)} settings: compare rows only within one setting (setting_key)"]
            if len(settings) > 1
            else []
        ),
    }


# -- difference of two groups --------------------------------------------------------
Order = Literal["given", "better_first"]


class DifferenceError(ValueError):
    """Input the difference cannot be computed from: (field, message) pairs."""

    def __init__(self, errors: list[tuple[str, str]], *, unknown: bool = False) -> None:
        self.unknown = unknown  # some id names no run (404), else too few finished runs (409)
        self.errors = errors
        super().__init__("; ".join(f"{f}: {m}" for f, m in errors))


def welch(a: list[float], b: list[float], level: float = 0.95) -> dict[str, Any]:
    """Mean of a and b, diff = mean_a − mean_b, Welch–Satterthwaite CI and Welch's t-test p."""
    from scipy import stats  # imported here: only this endpoint needs scipy

    na, nb = len(a), len(b)
    ma, mb = sum(a) / na, sum(b) / nb
    va = sum((x - ma) ** 2 for x in a) / (na - 1)
    vb = sum((x - mb) ** 2 for x in b) / (nb - 1)
    diff = ma - mb
    se2 = va / na + vb / nb
    out: dict[str, Any] = {
        "mean_a": ma,
        "mean_b": mb,
        "std_a": math.sqrt(va),
        "std_b": math.sqrt(vb),
        "diff": diff,
        "n_a": na,
        "n_b": nb,
        "level": level,
    }
    if se2 == 0.0:  # both sides constant: no spread to test against
        return out | {"se": 0.0, "df": None, "t": None, "p_value": None, "ci": [diff, diff]}
    se = math.sqrt(se2)
    df = se2**2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    t = diff / se
    p = float(2.0 * stats.t.sf(abs(t), df))
    half = float(stats.t.ppf(0.5 + level / 2.0, df)) * se
    return out | {"se": se, "df": df, "t": t, "p_value": p, "ci": [diff - half, diff + half]}


@dataclass
class _Side:
    values: list[float]
    used: list[Run]
    varying: list[str]
    errors: list[tuple[str, str]]
    summaries: list[CurveSummary]
    rounds: list[int]  # each used run's R


def _side(session: Session, name: str, ids: list[uuid.UUID], statistic: CurveStatistic) -> _Side:
    from lab.repository import runs as runs_repo

    found = runs_repo.get_runs(session, list(dict.fromkeys(ids)))
    errors: list[tuple[str, str]] = []
    missing = sorted({str(i) for i in ids} - {str(r.id) for r in found})
    if missing:
        errors.append((name, f"unknown run ids: {', '.join(missing)}"))
    finished = [r for r in found if r.status == RunStatus.SUCCEEDED]
    curves = curve_cache.acc_curves(session, finished)
    values: list[float] = []
    used: list[Run] = []
    summaries: list[CurveSummary] = []
    rounds: list[int] = []
    for r in finished:
        if not curves.get(r.id):
            continue
        timing, last = spec_cache.eval_profile(r.spec)
        v = curve_statistic(curves[r.id], statistic, timing, last)
        if not math.isnan(v):
            values.append(v)
            used.append(r)
            summaries.append(summarize_curve(curves[r.id], timing, last))
            rounds.append(last)
    if not missing and len(values) < 2:
        others = Counter(r.status for r in found if r not in used)
        left = f" ({', '.join(f'{n} {s}' for s, n in sorted(others.items()))} not counted)"
        errors.append(
            (
                name,
                f"needs at least 2 finished runs, has {len(values)}{left if others else ''}",
            )
        )
    flats = [flat_spec(r) for r in used]
    varying = varying_within(flats)
    return _Side(values, used, varying, errors, summaries, rounds)


def statistic_round(
    statistic: str, summaries: list[CurveSummary], rounds: list[int]
) -> dict[str, Any]:
    """Which round a per-run statistic is taken at, named as `fedgen.stats.format_acc` does.

    `round`: the final round every run shares (R-1 under before_training), None when they
    differ or for best/top5 (each run's own rounds); `last_round`: the runs' common R;
    `statistic_label`: "final @199" when the final is not the last round, else the name.
    """
    found_last = set(rounds)
    last = found_last.pop() if len(found_last) == 1 else None
    at = common_final_round(summaries) if statistic == "final" else None
    label = statistic
    if at is not None and at != last:
        label += f" @{at}"
    elif statistic == "final" and at is None and summaries:
        label += " (rounds differ)"
    return {"round": at, "last_round": last, "statistic_label": label}


def difference(
    session: Session,
    a: list[uuid.UUID],
    b: list[uuid.UUID],
    statistic: CurveStatistic,
    order: Order = "given",
) -> dict[str, Any]:
    """Group a − group b on a per-run accuracy statistic (final, best or top-5), Welch's test.

    `order="better_first"` swaps the sides when b's mean is higher, so the difference is
    never negative (`swapped` says so): the Compare page's default. Raises DifferenceError
    naming `a`/`b` for unknown ids or fewer than 2 finished runs.
    """
    sa = _side(session, "a", a, statistic)
    sb = _side(session, "b", b, statistic)
    if sa.errors or sb.errors:
        errors = sa.errors + sb.errors
        raise DifferenceError(errors, unknown=any("unknown run ids" in m for _, m in errors))
    warnings = [
        f"runs of side {s} differ in {', '.join(v)}: not one setting"
        for s, v in (("a", sa.varying), ("b", sb.varying))
        if v
    ]
    swapped = order == "better_first" and mean_std(sb.values)[0] > mean_std(sa.values)[0]
    if swapped:
        sa, sb = sb, sa
    fa, fb = flat_spec(sa.used[0]), flat_spec(sb.used[0])
    between = differing_fields([fa, fb])
    return {
        "statistic": statistic,
        **statistic_round(statistic, sa.summaries + sb.summaries, sa.rounds + sb.rounds),
        "unit": "fraction (x100 = percentage points)",
        **welch(sa.values, sb.values),
        "values_a": sa.values,
        "values_b": sb.values,
        "run_ids_a": [str(r.id) for r in sa.used],
        "run_ids_b": [str(r.id) for r in sb.used],
        "label_a": group_label({f: fa.get(f) for f in between}),
        "label_b": group_label({f: fb.get(f) for f in between}),
        "differs_in": between,
        "swapped": swapped,
        "warnings": warnings,
    }
