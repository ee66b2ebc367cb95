"""Plain typed factories for server tests: specs, users, runs, rounds (the fake runner: tests/support/fakes.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from fedgen.cost import COST_TOTALS
from fedgen.spec import parse_spec
from fedgen.specdict import merge
from fedgen.sweep import SweepSpec, expand
from lab.models import Run, User
from lab.repository import metrics as metrics_repo
from lab.repository import runs as runs_repo
from lab.repository import users as users_repo
from lab.repository import workers as workers_repo
from vocab.schemas.analysis import TimingTable
from vocab.schemas.runs import RunPublic
from vocab.schemas.sweeps import SummaryGroup, SweepSummary


def make_spec(**overrides: Any) -> dict[str, Any]:
    """A tiny valid spec as a dict; nested overrides merge (e.g. partition={'alpha': 1.0})."""
    spec: dict[str, Any] = {
        "data": {"name": "synthetic", "synthetic_samples": 400},
        "partition": {"num_users": 3},
        "users_per_round": 2,
        "rounds": 2,
        "local_steps": 2,
        "checkpoint_every": 1,
    }
    return merge(spec, overrides)


def create_user(session: Session, name: str = "alice", is_admin: bool = False) -> tuple[User, str]:
    """A user and a fresh token (committed)."""
    user, token = users_repo.create_user(session, name, is_admin)
    session.commit()
    return user, token


def live_worker(
    session: Session,
    queue: str = "cpu",
    slots: int = 1,
    name: str = "w1",
    datasets: list[str] | None = None,
) -> None:
    """A live worker row (heartbeat now) for `queue`: the dispatcher sends up to `slots` runs;
    with `datasets`, it says it can load only those (else it says nothing: it loads all)."""
    caps = None if datasets is None else {"slots": slots, "datasets": datasets, "devices": []}
    host = name.partition("@")[2] or None
    workers_repo.register(session, name, [queue], slots, host=host, capabilities=caps)
    session.commit()


def create_run(
    session: Session,
    owner: User,
    sweep_id: uuid.UUID | None = None,
    *,
    queue: str = "cpu",
    **overrides: Any,
) -> Run:
    """A queued run of make_spec(**overrides) on `queue` (the full name, prefix included)."""
    spec = parse_spec(make_spec(**overrides))
    run = runs_repo.create_run(
        session,
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        owner_id=owner.id,
        queue=queue,
        sweep_id=sweep_id,
    )
    session.commit()
    return run


def create_sweep_runs(
    session: Session, owner: User, grid: dict[str, list[Any]], base: dict[str, Any] | None = None
) -> tuple[uuid.UUID, list[Run]]:
    """A sweep row and its expanded runs, committed (no enqueue)."""
    from lab.repository import sweeps as sweeps_repo

    base = base or make_spec()
    sweep = sweeps_repo.create_sweep(session, name="t", base=base, grid=grid, owner_id=owner.id)
    runs = []
    for spec in expand(SweepSpec(name="t", base=base, grid=grid)):
        runs.append(
            runs_repo.create_run(
                session,
                spec=spec.model_dump(mode="json"),
                spec_hash=spec.spec_hash(),
                owner_id=owner.id,
                queue="cpu",
                sweep_id=sweep.id,
            )
        )
    session.commit()
    return sweep.id, runs


def seed_rounds(
    session: Session,
    run: Run,
    accs: list[float],
    status: str = "succeeded",
    users: int = 0,
    extra: Callable[[int], dict[str, float]] | None = None,
) -> None:
    """Write rounds 0..len(accs)-1 through the real write path, then set the status."""
    token = "seed"
    session.query(Run).filter(Run.id == run.id).update({"lease_token": token, "status": "running"})
    for r, acc in enumerate(accs):
        user_rows = [
            {
                "user": u,
                "test_acc": acc,
                "test_loss": 1.0,
                "num_test": 10,
                "selected": u % 2 == 0,
                "train_ms": 5.0,
                "train_loss": 0.5,
            }
            for u in range(users)
        ]
        metrics = {"test_acc": acc, "test_loss": 1.0 - acc, **(extra(r) if extra else {})}
        metrics_repo.write_round(
            session,
            run.id,
            token,
            round_=r,
            metrics=metrics,
            users=user_rows,
            checkpoints=[],
            lease_s=60,
        )
    runs_repo.finish(session, run.id, token, status=status)
    session.commit()


def public_run(**fields: Any) -> RunPublic:
    """A run as GET /runs/{id} answers it (the dashboard's input), every field the API always
    sends filled in: a queued fedavg run of 3 rounds; `fields` override (timestamps as ISO)."""
    body: dict[str, Any] = {
        "id": "r1",
        "status": "queued",
        "spec": {"algorithm": {"name": "fedavg"}, "seed": 0},
        "spec_hash": "0" * 16,
        "partition_fingerprint": None,
        "owner": "alice",
        "sweep_id": None,
        "attempt": 0,
        "worker": None,
        "device": None,
        "current_round": -1,
        "rounds": 3,
        "last_acc": None,
        "best_acc": None,
        "error": None,
        "cancel_requested": False,
        "priority": "normal",
        "tags": [],
        "note": "",
        "created_at": "2026-12-01T11:00:00Z",
        "started_at": None,
        "finished_at": None,
        "versions": {},
    }
    return RunPublic.model_validate({**body, **fields})


def summary_group(**fields: Any) -> SummaryGroup:
    """One group of GET /sweeps/{id}/summary, every field the API sends filled in (one finished
    run "a", no statistic); `fields` override, n_succeeded and n_total following n."""
    n = int(fields.get("n", 1))
    body: dict[str, Any] = {
        "label": "",
        "fields": {},
        "varying": [],
        "n": n,
        "n_succeeded": n,
        "n_total": n,
        "status_counts": {"succeeded": n},
        "excluded": {"counts": {}, "run_ids": {}},
        "seeds": [0],
        "final_mean": None,
        "final_std": None,
        "final_round": None,
        "last_round": None,
        "final_label": "final",
        "best_mean": None,
        "best_std": None,
        "best_round": None,
        "top5_mean": None,
        "top5_std": None,
        "n_seeds": 1,
        "final_seed_std": None,
        "best_seed_std": None,
        "top5_seed_std": None,
        "val_best_mean": None,
        "val_best_std": None,
        "val_best_seed_std": None,
        "n_val_best": 0,
        **{f"{c}_{s}": None for c in COST_TOTALS for s in ("mean", "seed_std")},
        "tune": None,
        "run_ids": ["a"],
        "all_run_ids": [],
    }
    return SummaryGroup.model_validate({**body, **fields})


def sweep_summary(*groups: SummaryGroup) -> SweepSummary:
    """GET /sweeps/{id}/summary of these groups."""
    return SweepSummary(
        sweep_id="s1",
        name="sweep",
        group_by=None,
        statistic="val_best",
        tune=None,
        groups=list(groups),
        warnings=[],
    )


def timing_table(*rows: dict[str, Any]) -> TimingTable:
    """GET /timing of these rows (each: algorithm, gen_batch_size, mean_ms, std_ms, n, setting,
    setting_key; the rest filled in)."""
    filled = [
        {
            "label": "",
            "fields": {},
            "n_runs": row.get("n", 1),
            "n_rounds": 1,
            "excluded": {"counts": {}, "run_ids": {}},
            "run_ids": [],
            **row,
        }
        for row in rows
    ]
    return TimingTable.model_validate(
        {"metric": "time_user_ms", "rows": filled, "settings": 1, "warnings": []}
    )
