"""Services between handlers and the repository.

Submitting only writes queued rows (rule 9: commit first); the dispatcher (lab.dispatch, run by
the workers) sends them. After the commit, submit runs one dispatch pass so a run starts at once
when its queue has a free slot; when that fails or finds the lease taken, the workers' next pass
sends it (FEDGEN_REAPER_S), so nothing depends on it.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException, status
from sqlalchemy.orm import Session

from api.budget import check_budget
from api.errors import FieldErrors
from fedgen.execution_spec import with_new_run_defaults
from fedgen.resources import format_bytes
from fedgen.sizes import checkpoint_estimate
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.specdict import merge
from fedgen.sweep import SweepSpec, expand, grid_location
from fedgen.versions import versions
from lab import fairshare
from lab.config import Settings
from lab.dispatch import dispatch_pass
from lab.models import Run, Sweep, User, utcnow
from lab.queue import Enqueue, queue_for_device
from lab.repository import annotations as annotations_repo
from lab.repository import audit, dispatch_state
from lab.repository import runs as runs_repo
from lab.repository import sweeps as sweeps_repo
from lab.repository.annotations import tags_of
from lab.repository.workers import served_queues
from vocab.data_roots import allowed_roots, data_path_problems
from vocab.run_status import Priority, RunStatus
from vocab.schemas.annotations import AnnotationsUpdate
from vocab.schemas.runs import RunPublic

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Submitter:
    """What every submission shares: the session, who submits, how tasks are sent, the settings.

    `dispatch_now=False` leaves the sending to the workers' dispatcher (a bench that starts its
    workers after submitting).
    """

    session: Session
    user: User
    enqueue: Enqueue
    settings: Settings
    dispatch_now: bool = True


def validate_spec(data: dict[str, Any], prefix: str = "spec.") -> ExperimentSpec:
    """parse_spec (strict, as the JSON schema says), SpecError as a 422 with field messages;
    a partition the dataset cannot satisfy is refused here too (it would fail on the worker)."""
    try:
        spec = parse_spec(data, strict=True)
    except SpecError as exc:
        raise FieldErrors(exc.errors, prefix) from None
    problem = partition_problem(spec)
    if problem is not None:
        raise FieldErrors([("partition", problem)], prefix)
    return spec


def check_data_paths(
    spec: ExperimentSpec, settings: Settings, prefix: str = "spec.", *, detailed: bool = False
) -> None:
    """422 naming `data.root` / `data.folder.path` when either resolves outside the lab's data
    roots (FEDGEN_DATA_ROOTS): no member's spec makes the server or a worker read other
    folders. Checked before anything looks at the files (`host_warnings`). A member is told
    one message per field; `detailed` (an admin): the path, why, and the roots."""
    problems = data_path_problems(spec.data, allowed_roots(settings.data_roots), detailed=detailed)
    if problems:
        raise FieldErrors(problems, prefix)


def check_sweep_data_paths(
    sweep: SweepSpec, specs: list[ExperimentSpec], settings: Settings, *, detailed: bool = False
) -> None:
    """`check_data_paths` of every run of a sweep: the grid value that set a refused path is
    named (`grid.data.root[1]`), else the base's field (`base.data.root`)."""
    roots = allowed_roots(settings.data_roots)
    keys = list(sweep.grid)
    combos = itertools.product(*(range(len(sweep.grid[k])) for k in keys))
    errors: list[tuple[str, str]] = []
    for spec, idx in zip(specs, combos, strict=True):
        for field, msg in data_path_problems(spec.data, roots, detailed=detailed):
            at = grid_location(keys, list(idx), field) or f"base.{field}"
            if (at, msg) not in errors:
                errors.append((at, msg))
    if errors:
        raise FieldErrors(errors)


def _hide_data_root(spec: ExperimentSpec, text: str) -> str:
    """`text` with the data root as this host resolves it (the default one lies under the
    server's home) written as the spec gives it, or as "<data root>"."""
    from fedgen.data.common import base_root

    shown = spec.data.root or "<data root>"
    base = base_root(spec.data)
    for form in sorted({str(base), str(base.resolve(strict=False))}, key=len, reverse=True):
        text = text.replace(form, shown)
    return text


def host_warnings(
    spec: ExperimentSpec, prefix: str = "spec.", *, detailed: bool = False
) -> list[tuple[str, str]]:
    """The dataset's own file check on this (the API's) host, for a dataset whose files each
    spec names (`folder`, or a CIFAR spec's `data.root`): (field, message) pairs to show, not to
    refuse, since the worker that runs the spec may be another host, with the files. Other
    datasets: nothing (the workers' offers say who has them). A member's messages show the data root as their spec gives it,
    never where it resolves on the server; `detailed` (an admin): as resolved."""
    from fedgen.data.registry import get_dataset

    decl = get_dataset(spec.data.name)
    # A dataset whose check reads a spec's data.root (cifar10, cifar100) is checked when the
    # spec names one: a missing or malformed file is named under `data.root`.
    if not decl.files_in_spec and not (spec.data.root and decl.check is not None):
        return []
    try:
        problems = decl.problems(spec.data)
    except Exception as exc:  # a plugin's check must not turn a valid spec into a 500
        problems = [("data", f"the dataset's check failed: {type(exc).__name__}: {exc}")]
    where = "seen from the lab server's host; a worker on another host may have the files"
    if not detailed:
        problems = [(field, _hide_data_root(spec, msg)) for field, msg in problems]
    return [(f"{prefix}{field}", f"{msg}; {where}") for field, msg in problems]


def check_data_files(
    spec: ExperimentSpec, prefix: str = "spec.", *, detailed: bool = False
) -> None:
    """422 naming `data.root` when a spec names its own data root for a dataset whose check
    reads it (cifar10, cifar100: `fedgen.data.cifar.cifar_check`) and a file there is missing
    (unless `data.download` fetches it) or malformed. Run after `check_data_paths`, so only a
    folder inside the lab's data roots is read, from this (the API's) host. A spec without
    `data.root` reads the workers' own data roots: the workers' offers say who has the files
    and dispatch waits for one. A member's message shows the root as their spec gives it."""
    from fedgen.data.registry import get_dataset

    decl = get_dataset(spec.data.name)
    if decl.files_in_spec or not (spec.data.root and decl.check is not None):
        return  # `folder`: its files are the worker's host's (warnings: host_warnings)
    try:
        problems = decl.problems(spec.data)
    except Exception:  # a plugin's check must not turn a valid spec into a 500
        log.exception("the dataset check of %s failed", spec.data.name)
        return
    if not detailed:
        problems = [(field, _hide_data_root(spec, msg)) for field, msg in problems]
    if problems:
        raise FieldErrors(problems, prefix)


def check_sweep_data_files(
    sweep: SweepSpec, specs: list[ExperimentSpec], *, detailed: bool = False
) -> None:
    """`check_data_files` of every run of a sweep, each data section once: the grid value that
    set a refused `data.root` is named (`grid.data.root[1]`), else `base.data.root`."""
    keys = list(sweep.grid)
    combos = itertools.product(*(range(len(sweep.grid[k])) for k in keys))
    seen: set[str] = set()
    errors: list[tuple[str, str]] = []
    for spec, idx in zip(specs, combos, strict=True):
        data = spec.data.model_dump_json()
        if data in seen:
            continue
        seen.add(data)
        try:
            check_data_files(spec, "", detailed=detailed)
        except FieldErrors as exc:
            for field, msg in exc.errors:
                at = grid_location(keys, list(idx), field) or f"base.{field}"
                if (at, msg) not in errors:
                    errors.append((at, msg))
    if errors:
        raise FieldErrors(errors)


def partition_problem(spec: ExperimentSpec) -> str | None:
    """Why the spec's split cannot be drawn (checked without loading data), or None."""
    from fedgen.data.partition import (
        infeasible_partition,
        official_min_samples,
        synthetic_class_counts,
    )
    from fedgen.data.registry import get_dataset
    from fedgen.fidelity import resolve

    d, p = spec.data, spec.partition
    known = get_dataset(d.name).train_class_counts  # declared sizes, plugins' included
    if d.name == "synthetic":
        counts = synthetic_class_counts(d.synthetic_samples, d.synthetic_classes)
    elif known is not None:
        counts = known
    else:
        # CelebA (natural groups), folder (its files are on the worker's host): checked when
        # loaded, and the run fails saying why.
        return None
    return infeasible_partition(
        counts,
        num_users=p.num_users,
        alpha=p.alpha,
        sampling_ratio=p.sampling_ratio,
        min_samples=official_min_samples(d.name, len(counts))
        if p.min_samples is None
        else p.min_samples,
        seed=p.data_seed,
        max_redraws=p.max_redraws,
        draws=resolve(spec).draws,
    )


def check_device_served(sub: Submitter, specs: list[ExperimentSpec], prefix: str) -> None:
    """422 naming `device` when a GPU run's queue has no live worker (it would wait forever).

    CPU runs are never refused: a lab always has a CPU queue, and `make demo` starts its
    worker after the first submission. `prefix` is where the request holds the spec
    (`spec.`, a clone's `changes.`, a sweep's `base.`).
    """
    served = served_queues(sub.session, sub.settings.worker_ttl_s)
    for spec in specs:
        queue = queue_for_device(spec.device, sub.settings.queue_prefix)
        if spec.device.startswith("cuda") and queue not in served:
            raise FieldErrors(
                [("device", f"{spec.device!r}: no live worker serves the {queue!r} queue")],
                prefix,
            )


def checkpoint_problem(spec: ExperimentSpec, limit: int) -> tuple[str, str] | None:
    """(field, message) when the spec's estimated full checkpoint is over `limit` bytes."""
    est = checkpoint_estimate(spec)
    if est.total <= limit:
        return None
    return (
        est.driving_field() or "(root)",
        f"estimated full checkpoint {format_bytes(est.total)} is over the limit "
        f"FEDGEN_MAX_CHECKPOINT_BYTES = {format_bytes(limit)}",
    )


def check_checkpoint_size(sub: Submitter, specs: list[ExperimentSpec], prefix: str) -> None:
    """422 naming the field that drives it when a spec's full checkpoint would be too large
    (it could never be stored: checkpoints are written in the round's transaction)."""
    for i, spec in enumerate(specs):
        problem = checkpoint_problem(spec, sub.settings.max_checkpoint_bytes)
        if problem is not None:
            field, msg = problem
            if len(specs) > 1:
                msg += f" (run {i} of the grid)"
            raise FieldErrors([(field, msg)], prefix)


def check_priority(user: User, priority: Priority) -> None:
    """403 naming the field unless the user may submit at this priority (high: admins only)."""
    if priority == Priority.HIGH and not user.is_admin:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, "priority: 'high' is for admins only (use low or normal)"
        )


def _dispatch_now(sub: Submitter, queues: set[str]) -> None:
    """One dispatch pass over the submitted runs' queues; any failure is left to the workers."""
    if not sub.dispatch_now:
        return
    holder = f"api:{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"
    try:
        dispatch_pass(sub.session, sub.enqueue, sub.settings, holder, queues=queues)
    except Exception:  # the rows are committed; the workers' dispatcher sends them
        sub.session.rollback()
        log.exception("dispatch after submission failed; the workers' dispatcher will send")


def _queued_row(sub: Submitter, spec: ExperimentSpec, priority: Priority, **extra: Any) -> Run:
    """A queued run row for `spec`, with the queue its device is served from."""
    return runs_repo.create_run(
        sub.session,
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        owner_id=sub.user.id,
        queue=queue_for_device(spec.device, sub.settings.queue_prefix),
        priority=priority,
        **extra,
    )


def submit_run(
    sub: Submitter,
    spec: ExperimentSpec,
    *,
    priority: Priority = Priority.NORMAL,
    prefix: str = "spec.",
) -> Run:
    """Insert a queued run (recording its queue), commit, then try to dispatch at once."""
    check_priority(sub.user, priority)
    check_data_paths(spec, sub.settings, prefix, detailed=bool(sub.user.is_admin))
    check_data_files(spec, prefix, detailed=bool(sub.user.is_admin))
    check_checkpoint_size(sub, [spec], prefix)
    check_device_served(sub, [spec], prefix)
    [size] = check_budget(sub.session, sub.user, sub.settings, [spec], prefix)
    run = _queued_row(sub, spec, priority, sweep_id=None, versions=versions(), estimated_bytes=size)
    sub.session.commit()
    _dispatch_now(sub, {run.queue})
    return run


def clone_run(
    sub: Submitter, run: Run, changes: dict[str, Any], *, priority: Priority = Priority.NORMAL
) -> Run:
    """A new run from an existing run's spec with `changes` merged in.

    The clone keeps the run's tags as they are now (edited or not) but not its note, which
    was about the original run; `changes` may give either.
    """
    base = {**run.spec, "note": "", "tags": tags_of(run.tags_csv)}
    spec = validate_spec(merge(base, changes), prefix="changes.")
    return submit_run(sub, spec, priority=priority, prefix="changes.")


def submit_sweep(
    sub: Submitter,
    name: str,
    base: dict[str, Any],
    grid: dict[str, Any],
    *,
    priority: Priority = Priority.NORMAL,
) -> tuple[Sweep, list[Run]]:
    """Expand the grid (all specs validated first), insert sweep and runs, commit, dispatch.
    A base that names no `execution` gets the lab's default for new runs (`auto`)."""
    check_priority(sub.user, priority)
    base = with_new_run_defaults(base)
    try:
        sweep_spec = SweepSpec(name=name, base=base, grid=grid)
        specs = expand(sweep_spec, strict=True)
    except SpecError as exc:
        raise FieldErrors(exc.errors) from None
    check_sweep_data_paths(sweep_spec, specs, sub.settings, detailed=bool(sub.user.is_admin))
    check_sweep_data_files(sweep_spec, specs, detailed=bool(sub.user.is_admin))
    for i, spec in enumerate(specs):
        problem = partition_problem(spec)
        if problem is not None:
            raise FieldErrors([("base.partition", f"{problem} (run {i} of the grid)")])
    check_checkpoint_size(sub, specs, "base.")
    check_device_served(sub, specs, "base.")
    sizes = check_budget(sub.session, sub.user, sub.settings, specs, "base.", sweep=True)
    sweep = sweeps_repo.create_sweep(
        sub.session, name=name, base=base, grid=grid, owner_id=sub.user.id
    )
    recorded = versions()
    runs = [
        _queued_row(sub, s, priority, sweep_id=sweep.id, versions=recorded, estimated_bytes=n)
        for s, n in zip(specs, sizes, strict=True)
    ]
    sub.session.commit()
    _dispatch_now(sub, {r.queue for r in runs})
    return sweep, runs


def withdraw_run(session: Session, run: Run, actor: audit.Actor) -> None:
    """Cancel `run` and record run.cancel; `run` is read afresh (the request's session commits).

    The rule: cancel stops the run (queued: at once; running: between rounds) and keeps every
    checkpoint it has committed (full, generator, final); they go only when the run is purged
    from the trash (lab.trash_actions). The worker's and the dispatcher's cancel paths keep them too.
    """
    was = run.status
    runs_repo.request_cancel(session, run.id)
    audit.record(session, actor, "run.cancel", "run", run.id, status=was, owner=run.owner.name)
    session.flush()
    session.refresh(run)


def annotate_run(session: Session, run: Run, body: AnnotationsUpdate, user: User) -> None:
    """Set the run's tags and/or note as `user`, then read the run afresh (the request's
    session commits)."""
    if body.tags is None and body.note is None:
        return  # nothing to change (an empty merge patch): who and when stay as they were
    annotations_repo.annotate_run(session, run.id, tags=body.tags, note=body.note, by=user.name)
    session.refresh(run)


def annotate_sweep(session: Session, sweep: Sweep, body: AnnotationsUpdate, user: User) -> None:
    """Set the sweep's tags and/or note as `user`, then read the sweep afresh."""
    if body.tags is None and body.note is None:
        return
    annotations_repo.annotate_sweep(session, sweep.id, tags=body.tags, note=body.note, by=user.name)
    session.refresh(sweep)


def run_public(run: Run) -> RunPublic:
    """ORM row (owner loaded) -> RunPublic, without queue fields (see runs_public)."""
    return RunPublic.model_validate(run)


def _needs_worker(run: Run) -> bool:
    """Queued, or running without a live lease (by this process's clock: a hint for display)."""
    if run.status == RunStatus.QUEUED:
        return True
    expires = run.lease_expires_at
    return run.status == RunStatus.RUNNING and (
        not run.lease_token or expires is None or expires < utcnow()
    )


def runs_public(session: Session, runs: list[Run], settings: Settings) -> list[RunPublic]:
    """RunPublic of each run; queued ones get queue_position and expected_start, and each run
    waiting for a worker (queued, or handed back mid-run) its waiting_reason when no live worker
    can serve it.

    The snapshot of the queue is read once for the whole list, only when a run waits.
    """
    out = [RunPublic.model_validate(r) for r in runs]
    if not any(_needs_worker(r) for r in runs):
        return out
    snap = dispatch_state.queue_snapshot(session, settings.worker_ttl_s)
    where = fairshare.positions(snap)
    waiting = {w.id: w for w in snap.waiting}
    for pub in out:
        rid = uuid.UUID(pub.id)
        if pub.status == RunStatus.QUEUED and rid in where:
            pub.queue_position, pub.expected_start = where[rid]
        if rid in waiting:
            pub.waiting_reason = fairshare.waiting_reason(snap, waiting[rid])
    return out
