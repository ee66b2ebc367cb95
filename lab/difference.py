"""The difference of two groups of runs (`GET /difference`): per-run statistics, their means,
Welch's confidence interval and t-test."""

from __future__ import annotations

import math
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.orm import Session

from fedgen.specdict import (
    differing_fields,
    group_label,
    varying_within,
)
from fedgen.stats import (
    CurveStatistic,
    CurveSummary,
    curve_statistic,
    mean_std,
    summarize_curve,
)
from lab import curve_cache, spec_cache
from lab.analysis import flat_spec, statistic_round
from lab.models import Run
from lab.repository import metrics as metrics_repo
from vocab.run_status import RunStatus

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
    vals = (
        metrics_repo.val_curves(session, [r.id for r in finished])
        if statistic == "val_best"
        else {}
    )
    values: list[float] = []
    used: list[Run] = []
    summaries: list[CurveSummary] = []
    rounds: list[int] = []
    for r in finished:
        if not curves.get(r.id):
            continue
        timing, last = spec_cache.eval_profile(r.spec)
        v = curve_statistic(curves[r.id], statistic, timing, last, vals.get(r.id))
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
