"""Runs grouped for the server's aggregates, and the sweep summary (with tuning and its CSV).

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
from typing import Any

from sqlalchemy.orm import Session

from fedgen.cost import COST_TOTALS, cost_columns, run_cost
from fedgen.specdict import (
    differing_fields,
    group_fields,
    group_items,
    group_label,
    value_order,
    varying_within,
)
from fedgen.stats import (
    CurveStatistic,
    CurveSummary,
    common_final_round,
    mean_std,
    pooled_top5,
    reported_curve,
    seed_std,
    summarize_curve,
    val_best,
    validation_statistic,
)
from lab import curve_cache, spec_cache
from lab.models import Run
from lab.repository import sweeps as sweeps_repo
from vocab.run_status import RunStatus
from vocab.safe_csv import SafeWriter


def nan_none(x: float) -> float | None:
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


# -- sweep summary -------------------------------------------------------------------
class SummaryError(ValueError):
    """A sweep summary that cannot be computed as asked: (query field, message) pairs."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{f}: {m}" for f, m in errors))


def sweep_summary(
    session: Session,
    sweep_id: uuid.UUID,
    by: list[str] | None = None,
    statistic: CurveStatistic = "val_best",
    tune: list[str] | None = None,
) -> dict[str, Any]:
    """One row per group: n finished runs, final, best, top-5 and val_best accuracy mean ± std
    over them, and their cost (MB communicated, clients' and server's training time).

    "final" is the one meaning (`fedgen.stats`): the last round the run's protocol evaluates,
    `final_round` (R-1 under before_training), named in `final_label` ("final @29") when it is
    not the runs' last round `last_round`; "best" is the highest accuracy over the same rounds.
    With `tune` (swept fields), each row is a group of the other fields, its figures those of
    the values of the tuned fields with the best mean validation `statistic` (`_tuned_rows`).
    Returns {"group_by", "statistic", "tune", "groups", "warnings"}; each group lists its
    unfinished runs apart. Raises SummaryError naming `tune` for a field it cannot tune.
    """
    runs = sweeps_repo.runs_of_sweep(session, sweep_id, analysis=True)
    if tune:
        check_tune(runs, tune, by)
        groups = group_runs(runs, [*by, *tune] if by is not None else None)
    else:
        groups = group_runs(runs, by)
    finished = groups_finished(groups)
    curves = curve_cache.acc_curves(session, finished)
    extras = curve_cache.val_and_cost(session, finished)
    counted = {g.key: _counted(g, curves, extras) for g in groups}
    if tune:
        rows, warnings = _tuned_rows(runs, groups, counted, by, statistic, tune)
    else:
        rows = [_summary_row(g, counted[g.key]) for g in groups]
        warnings = warnings_of(groups)
    return {
        "group_by": by,
        "statistic": statistic,
        "tune": tune or None,
        "groups": rows,
        "warnings": warnings,
    }


def check_tune(runs: list[Run], tune: list[str], by: list[str] | None) -> None:
    """SummaryError naming `tune` for a field no spec of the sweep has, one the sweep does not
    vary (nothing to choose), the seed, a `group_by` field, or a sweep without validation data."""
    flats = [flat_spec(r) for r in runs]
    known = set(group_fields(flats))
    swept = set(differing_fields(flats))
    errors: list[str] = []
    unknown = [f for f in tune if f not in known and f != "seed"]
    if unknown:
        errors.append(
            f"unknown field(s) {', '.join(unknown)}; fields swept in this sweep: "
            f"{', '.join(sorted(swept)) or 'none'}"
        )
    fixed = [f for f in tune if f in known and f not in swept]
    if fixed:
        errors.append(
            f"{', '.join(fixed)} not swept (one value in every run): nothing to choose; "
            f"fields swept in this sweep: {', '.join(sorted(swept)) or 'none'}"
        )
    if "seed" in tune:
        errors.append("seed: the seeds are what each configuration is averaged over")
    if by is not None and (both := [f for f in tune if f in by]):
        errors.append(f"{', '.join(both)} both grouped by (group_by) and tuned")
    if not errors and runs and all(not f.get("partition.val_fraction") for f in flats):
        errors.append(
            "tuning by validation needs validation data: every run of this sweep has "
            "partition.val_fraction 0 (sweep with partition.val_fraction > 0, e.g. 0.1)"
        )
    if errors:
        raise SummaryError([("tune", e) for e in errors])


@dataclass
class _Counted:
    """A group's runs that count (succeeded, with a curve), each with what its profile reports."""

    runs: list[Run] = field(default_factory=list)
    reported: list[list[float]] = field(default_factory=list)  # the curve its profile reports
    summaries: list[CurveSummary] = field(default_factory=list)
    last_rounds: list[int] = field(default_factory=list)  # each run's R
    val_best: list[float] = field(default_factory=list)  # NaN without validation data
    costs: list[dict[str, float]] = field(default_factory=list)  # fedgen.cost.run_cost
    # Each run's per-round validation accuracies and its reading of the timing (tuning).
    val_curves: list[list[float]] = field(default_factory=list)
    profiles: list[tuple[str, int]] = field(default_factory=list)

    def test_values(self, statistic: CurveStatistic) -> list[float]:
        """Each run's (test) statistic."""
        if statistic == "val_best":
            return list(self.val_best)
        if statistic == "top5":
            return [c.top5_mean for c in self.summaries]
        return [getattr(c, statistic) for c in self.summaries]

    def val_values(self, statistic: CurveStatistic) -> list[float]:
        """Each run's validation counterpart of the statistic (NaN without validation data)."""
        return [
            validation_statistic(v, statistic, timing, rounds)
            for v, (timing, rounds) in zip(self.val_curves, self.profiles, strict=True)
        ]


def _counted(
    group: RunGroup,
    curves: dict[uuid.UUID, list[float]],
    extras: dict[uuid.UUID, tuple[list[float], dict[str, float]]],
) -> _Counted:
    """The group's succeeded runs that have a curve, read under each run's fidelity profile
    (official: the post-final model is not among the reported rounds); `extras`: each run's
    validation curve and cost (`curve_cache.val_and_cost`)."""
    out = _Counted()
    for r in group.finished:
        if not curves.get(r.id):
            continue
        timing, rounds = spec_cache.eval_profile(r.spec)
        vals, cost = extras.get(r.id, ([], run_cost({})))
        out.reported.append(reported_curve(curves[r.id], timing, rounds))
        out.summaries.append(summarize_curve(curves[r.id], timing, rounds))
        out.val_best.append(val_best(curves[r.id], vals, timing, rounds)[0])
        out.costs.append(cost)
        out.val_curves.append(vals)
        out.profiles.append((timing, rounds))
        out.runs.append(r)
        out.last_rounds.append(rounds)
    return out


def _summary_row(g: RunGroup, counted: _Counted) -> dict[str, Any]:
    """One group's row of the sweep summary (its CSV columns: `summary_csv`)."""
    finals = counted.summaries
    final_m, final_s = mean_std([c.final for c in finals])
    best_m, best_s = mean_std([c.best for c in finals])
    top_m, top_s = pooled_top5(counted.reported)
    vb = [v for v in counted.val_best if not math.isnan(v)]
    vb_m, vb_s = mean_std(vb)
    named = statistic_round("final", finals, counted.last_rounds)
    best_rounds = {c.best_round for c in finals}
    costs = cost_columns(counted.costs)
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
        "final_mean": nan_none(final_m),
        "final_std": nan_none(final_s),
        # The round the final figures are from (R-1 under before_training, where the
        # official code never evaluates round R); None if the members differ.
        "final_round": common_final_round(finals),
        # The runs' R: final_round differs from it under before_training ("final @R-1").
        "last_round": named["last_round"],
        "final_label": named["statistic_label"],
        # Best: each run's highest evaluated accuracy (same rounds as final), mean ± std;
        # best_round only when every run peaked at one round.
        "best_mean": nan_none(best_m),
        "best_std": nan_none(best_s),
        "best_round": best_rounds.pop() if len(best_rounds) == 1 else None,
        "top5_mean": nan_none(top_m),
        "top5_std": nan_none(top_s),  # pooled, as the official code reports
        # Test accuracy at each run's best validation round, over the runs that have
        # validation data (n_val_best of them).
        "val_best_mean": nan_none(vb_m),
        "val_best_std": nan_none(vb_s),
        "n_val_best": len(vb),
        # The spread of each seed's own statistic (ddof 1), beside the pooled std above.
        "n_seeds": len(counted.runs),
        "final_seed_std": nan_none(seed_std([c.final for c in finals])),
        "best_seed_std": nan_none(seed_std([c.best for c in finals])),
        "top5_seed_std": nan_none(seed_std([c.top5_mean for c in finals])),
        "val_best_seed_std": nan_none(seed_std(vb)),
        # Cost per run (fedgen.cost): mean and seed std over the counted runs.
        **costs,
        "tune": None,
        "run_ids": [str(r.id) for r in counted.runs],
        "all_run_ids": [str(r.id) for r in g.members],
    }


def _tuned_rows(
    runs: list[Run],
    configs: list[RunGroup],
    counted: dict[str, _Counted],
    by: list[str] | None,
    statistic: CurveStatistic,
    tune: list[str],
) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per group of the non-tuned fields: the figures of its best configuration.

    `configs` are the runs grouped by every field but the seed (or by `by` + `tune`): each a
    configuration of the tuned fields inside a group of the others. A configuration's
    validation figure is the mean over its runs of each run's validation statistic
    (`fedgen.stats.validation_statistic`; runs without validation data left out); the chosen
    one has the highest (ties: the first in the configurations' order, by their values), and
    the row reports its runs' figures, so `<statistic>_mean` is the test statistic there. A
    group none of whose configurations has a validation figure chooses nothing (`chosen`
    null, its figures null). The budget is the number of configurations in the group.
    """
    flats = {str(r.id): flat_spec(r) for r in runs}
    outer_by = by if by is not None else [f for f in group_fields(flats.values()) if f not in tune]
    outer = group_runs(runs, outer_by)
    for g in outer:  # the tuned fields vary inside each group by design
        g.fields = {f: v for f, v in g.fields.items() if f not in tune}
    config_of = {str(r.id): c for c in configs for r in c.members}
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    for g in outer:
        mine = list({config_of[str(r.id)].key: config_of[str(r.id)] for r in g.members}.values())
        mine.sort(key=lambda c: value_order([flats[str(c.members[0].id)].get(f) for f in tune]))
        candidates: list[dict[str, Any]] = []
        val_means: list[float | None] = []
        for c in mine:
            cc = counted[c.key]
            vals = [v for v in cc.val_values(statistic) if not math.isnan(v)]
            tests = [v for v in cc.test_values(statistic) if not math.isnan(v)]
            val_means.append(sum(vals) / len(vals) if vals else None)
            candidates.append(
                {
                    "values": {f: flats[str(c.members[0].id)].get(f) for f in tune},
                    "val_mean": val_means[-1],
                    "test_mean": sum(tests) / len(tests) if tests else None,
                    "test_seed_std": nan_none(seed_std(tests)),
                    "n": len(cc.runs),
                    "n_val": len(vals),
                    "run_ids": [str(r.id) for r in cc.runs],
                }
            )
        ranked = [(v, i) for i, v in enumerate(val_means) if v is not None]
        # The highest mean validation; ties: the first configuration (the lowest index).
        best = max(ranked, key=lambda vi: (vi[0], -vi[1]))[1] if ranked else None
        if best is None:
            row = _summary_row(g, _Counted())
            warnings.append(
                f"group {g.label!r}: no configuration has validation data "
                "(partition.val_fraction 0, or no run finished yet): nothing chosen"
            )
        else:
            chosen = mine[best]
            row = _summary_row(
                RunGroup(g.key, chosen.members, g.fields, varying_within_runs(chosen)),
                counted[chosen.key],
            )
            if row["varying"]:
                warnings.append(
                    f"group {g.label!r} mixes runs that differ in {', '.join(row['varying'])}"
                )
        pick = candidates[best] if best is not None else None
        row["tune"] = {
            "statistic": statistic,
            "fields": tune,
            "chosen": pick["values"] if pick else None,
            "val_mean": pick["val_mean"] if pick else None,
            "test_mean": pick["test_mean"] if pick else None,
            "test_seed_std": pick["test_seed_std"] if pick else None,
            "budget": len(candidates),
            "candidates": candidates,
        }
        rows.append(row)
    return rows, warnings


def varying_within_runs(group: RunGroup) -> list[str]:
    """The fields that still differ among a group's runs (besides the seed & co.)."""
    return varying_within([flat_spec(r) for r in group.members])


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
        "val_best_mean",
        "val_best_std",
        "n_seeds",
        "final_seed_std",
        "best_seed_std",
        "top5_seed_std",
        "val_best_seed_std",
        *(f"{c}_{s}" for c in COST_TOTALS for s in ("mean", "seed_std")),
    ]
    # With tune: the chosen values, the validation figure they were chosen by, the budget.
    tuned: list[str] = next((r["tune"]["fields"] for r in rows if r["tune"]), [])
    tune_cols = [*(f"tuned.{f}" for f in tuned), "tune_val_mean", "tune_budget"] if tuned else []
    w.writerow([*cols, *tune_cols, "varying"])
    for r in rows:
        t = r["tune"] or {}
        chosen = t.get("chosen") or {}
        w.writerow(
            [
                r["label"],
                *(r["fields"].get(f) for f in field_names),
                *(r[c] if r[c] is not None else "" for c in cols[1 + len(field_names) :]),
                *(
                    [*(chosen.get(f, "") for f in tuned), t.get("val_mean"), t.get("budget")]
                    if tuned
                    else []
                ),
                " ".join(r["varying"]),
            ]
        )
    return buf.getvalue()
