"""Whether a pushed run folder's results hold together, checked by the lab that receives it
(`POST /runs/push`; a run folder comes from `fedgen run` and `fedgen push`): every round 0..R stored once, in order, with each user's row, and a summary whose figures
are the ones its own curve gives (fedgen.stats, the protocol's rounds): a summary that does not
add up (edited, or from another run) is refused. Pure: no files, no torch."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from fedgen.fidelity import resolve
from fedgen.spec import ExperimentSpec
from fedgen.stats import summarize_curve

# The summary's figures recomputed from the curve, with the tolerance they must agree within
# (a JSON float round-trip keeps 17 digits; 1e-9 leaves room for no edit a person would make).
TOLERANCE = 1e-9


def _close(a: Any, b: float) -> bool:
    if not isinstance(a, int | float) or isinstance(a, bool):
        return False
    if math.isnan(b):
        return math.isnan(float(a))
    return abs(float(a) - b) <= TOLERANCE


def result_problems(
    spec: ExperimentSpec,
    rounds: Sequence[Mapping[str, Any]],
    summary: Mapping[str, Any] | None,
) -> list[tuple[str, str]]:
    """(field, message) for each way the rounds and summary fail the spec: missing or repeated
    rounds, a round without test_acc or without its users' rows, no summary, a summary whose
    final, best or top-5 figures differ from those its curve gives. Empty: they hold."""
    problems: list[tuple[str, str]] = []
    numbers = [r.get("round") for r in rounds]
    expected = list(range(spec.rounds + 1))
    if numbers != expected:
        problems.append(
            (
                "rounds",
                f"rounds 0..{spec.rounds} once each, in order, expected; got {len(numbers)}"
                f" rounds{f' from {numbers[0]} to {numbers[-1]}' if numbers else ''}",
            )
        )
        return problems
    accs: list[float] = []
    for i, r in enumerate(rounds):
        acc = r.get("metrics", {}).get("test_acc")
        if not isinstance(acc, int | float) or isinstance(acc, bool) or not math.isfinite(acc):
            problems.append((f"rounds[{i}].metrics.test_acc", "a finite number is required"))
            return problems
        accs.append(float(acc))
        if not r.get("users"):
            problems.append((f"rounds[{i}].users", "the round's per-user rows are missing"))
            return problems
    if summary is None:
        problems.append(("summary", "the run has no summary: it did not finish"))
        return problems
    curve = summarize_curve(accs, resolve(spec).eval_timing, spec.rounds)
    checks = {
        "final_acc": curve.final,
        "final_round": float(curve.final_round),
        "best_acc": curve.best,
        "best_round": float(curve.best_round),
        "top5_mean": curve.top5_mean,
        "top5_std": curve.top5_std,
        "rounds_done": float(spec.rounds),
    }
    for name, value in checks.items():
        if not _close(summary.get(name), value):
            problems.append(
                (
                    f"summary.{name}",
                    f"{summary.get(name)!r} is not what the metrics give ({value!r})",
                )
            )
    return problems
