"""A member's budget at submission: FEDGEN_MAX_SUBMISSION_CPU_S and FEDGEN_MAX_MEMBER_CPU_S
(422), FEDGEN_MAX_QUEUED_RUNS_PER_MEMBER (429) and their quota (FEDGEN_QUOTA_BYTES or their
own, 422).

A submission's CPU time is the study estimates' (fedgen.studies.costs.estimate_cpu_s, one core),
summed over its runs as the workers run them (each on its own), and refused over the cap with
the estimate and the limit in the message; added to what the member's queued and running runs
are estimated to take (lab/repository/usage.py: pending_cpu_s), it must stay within
FEDGEN_MAX_MEMBER_CPU_S, so the cap cannot be passed one submission at a time.

A run's footprint is estimated from its spec (vocab.footprint.footprint_estimate: the checkpoints
kept, the final model, every round's rows) and a sweep's is the sum of its runs' (a study
submits a sweep). It is refused when the estimate would take the owner's usage past their
quota, where usage counts what their runs store now and what their queued and running runs
are still estimated to add (lab/repository/usage.py), so a member cannot pass the quota one
submission at a time. The member's row is locked first (PostgreSQL), so two submissions of
one member are checked one after the other.
"""

from __future__ import annotations

from typing import NoReturn

from fastapi import HTTPException, status
from sqlalchemy import select
from sqlalchemy.orm import Session

from api.errors import FieldErrors
from fedgen.resources import format_bytes
from fedgen.spec import ExperimentSpec
from fedgen.studies.costs import estimate_cpu_s, format_duration
from lab.config import Settings
from lab.models import User
from lab.repository.usage import Usage, member_usage, pending_cpu_s
from vocab.footprint import KeepRule, footprint_estimate, footprint_field

# A full queue drains as runs start: asking again a minute later is a fair first wait.
QUEUED_RETRY_AFTER_S = 60


def generator_rule(settings: Settings) -> KeepRule:
    """The retention rule of generator checkpoints the estimate counts: the one the workers
    prune by (FEDGEN_KEEP_GENERATOR_CHECKPOINTS, lab/checkpoint_retention.py)."""
    return settings.generator_keep_rule


def estimate(spec: ExperimentSpec, settings: Settings) -> int:
    """Bytes `spec`'s run will store once finished, under this lab's retention settings."""
    return footprint_estimate(spec, settings.keep_full_checkpoints, generator_rule(settings)).total


def _lock_member(session: Session, user: User) -> None:
    """Serialize one member's submissions (SELECT ... FOR UPDATE; nothing on SQLite, where a
    write transaction is one at a time anyway)."""
    session.execute(select(User.id).where(User.id == user.id).with_for_update())


def _queued_problem(usage: Usage, adding: int, cap: int) -> str | None:
    if usage.queued_runs + adding <= cap:
        return None
    return (
        f"max_queued_runs: {usage.queued_runs} of your runs are queued and this submission adds "
        f"{adding}: {usage.queued_runs + adding} is over the limit "
        f"FEDGEN_MAX_QUEUED_RUNS_PER_MEMBER = {cap}; submit again once some have started, or "
        "cancel some"
    )


def _quota_name(usage: Usage) -> str:
    if usage.quota_is_default:
        return "FEDGEN_QUOTA_BYTES"
    return f"{usage.name}'s quota (fedgen-lab quota set)"


def _quota_message(usage: Usage, total: int, what: str) -> str:
    reserved = (
        f" (stored {format_bytes(usage.usage_bytes)} + {format_bytes(usage.reserved_bytes)} "
        "still to come from your queued and running runs)"
        if usage.reserved_bytes
        else ""
    )
    return (
        f"estimated footprint {format_bytes(total)} of {what} + usage "
        f"{format_bytes(usage.committed_bytes)}{reserved} = "
        f"{format_bytes(total + usage.committed_bytes)} is over the limit "
        f"{_quota_name(usage)} = {format_bytes(usage.quota_bytes)}; delete runs you no longer "
        "need (they count until purged from the trash) or ask an admin for more"
    )


def _what(specs: list[ExperimentSpec]) -> str:
    return "this run" if len(specs) == 1 else f"these {len(specs)} runs"


def cpu_problem(specs: list[ExperimentSpec], total: float, limit_s: float) -> str | None:
    """Why `specs` (estimated `total` CPU seconds) ask for too much CPU time at once
    (FEDGEN_MAX_SUBMISSION_CPU_S), or None."""
    if total <= limit_s:
        return None
    return (
        f"estimated CPU time {total:,.0f} s ({format_duration(total)} on one core) of "
        f"{_what(specs)} is over the limit FEDGEN_MAX_SUBMISSION_CPU_S = {limit_s:,.0f} s "
        f"({format_duration(limit_s)}); submit fewer runs, seeds or rounds at a time"
    )


def member_cpu_problem(
    specs: list[ExperimentSpec], total: float, pending: float, limit_s: float
) -> str | None:
    """Why `specs` (`total` CPU seconds) on top of the member's queued and running runs
    (`pending`) are too much (FEDGEN_MAX_MEMBER_CPU_S), or None."""
    if pending + total <= limit_s:
        return None
    return (
        f"estimated CPU time {total:,.0f} s of {_what(specs)} + {pending:,.0f} s still to come "
        f"from your queued and running runs = {pending + total:,.0f} s "
        f"({format_duration(pending + total)} on one core) is over the limit "
        f"FEDGEN_MAX_MEMBER_CPU_S = {limit_s:,.0f} s ({format_duration(limit_s)}); submit again "
        "once some have finished, or cancel some"
    )


def _cpu_refused(problem: str, specs: list[ExperimentSpec], prefix: str, sweep: bool) -> NoReturn:
    """The 422 of a CPU-time limit: on `grid` for a sweep of several runs, else on `rounds`."""
    if sweep and len(specs) > 1:
        raise FieldErrors([("grid", problem)])
    raise FieldErrors([("rounds", problem)], prefix)


def check_budget(
    session: Session,
    user: User,
    settings: Settings,
    specs: list[ExperimentSpec],
    prefix: str,
    *,
    sweep: bool = False,
) -> list[int]:
    """Each spec's estimated footprint, after checking the member may submit them all: 429
    over the queued-runs cap, 422 over the quota naming the field that drives the estimate
    (`grid` for a sweep of several runs), 422 over either CPU-time limit (on `grid`, or a
    run's `rounds`). `prefix`: where the request holds the spec."""
    cpu_s = sum(estimate_cpu_s(s) for s in specs)
    too_long = cpu_problem(specs, cpu_s, settings.max_submission_cpu_s)
    if too_long is not None:
        _cpu_refused(too_long, specs, prefix, sweep)
    _lock_member(session, user)
    too_much = member_cpu_problem(
        specs, cpu_s, pending_cpu_s(session, user.id), settings.max_member_cpu_s
    )
    if too_much is not None:
        _cpu_refused(too_much, specs, prefix, sweep)
    usage = member_usage(session, user.id, settings.quota_bytes)
    problem = _queued_problem(usage, len(specs), settings.max_queued_runs_per_member)
    if problem is not None:
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            problem,
            headers={"Retry-After": str(QUEUED_RETRY_AFTER_S)},
        )
    rule = generator_rule(settings)
    footprints = [footprint_estimate(s, settings.keep_full_checkpoints, rule) for s in specs]
    sizes = [f.total for f in footprints]
    total = sum(sizes)
    if usage.committed_bytes + total <= usage.quota_bytes:
        return sizes
    if sweep and len(specs) > 1:
        raise FieldErrors(
            [("grid", _quota_message(usage, total, f"the sweep's {len(specs)} runs"))]
        )
    field = footprint_field(specs[0], footprints[0])
    raise FieldErrors([(field, _quota_message(usage, total, "this run"))], prefix)
