"""A budget per member: FEDGEN_QUOTA_BYTES (422 with the estimate, the usage and the limit),
FEDGEN_MAX_QUEUED_RUNS_PER_MEMBER (429 with the count and the limit), and GET /me's usage kept
from what runs store: it grows with a run's rounds and checkpoints, stays while the run is in
the trash and goes when it is purged."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from fedgen.execution_spec import with_new_run_defaults
from fedgen.resources import format_bytes
from fedgen.spec import ExperimentSpec
from lab import trash_actions
from lab.config import Settings
from lab.models import Run
from lab.repository import metrics as metrics_repo
from tests.support.factories import make_spec
from vocab.footprint import footprint_estimate, round_bytes

API = "/api/v1"
FEDGEN = make_spec(algorithm={"name": "fedgen"})
SIZE = r"\d+(\.\d)? (B|KiB|MiB|GiB)"


def _estimate(spec: dict[str, Any], settings: Settings) -> int:
    """The estimate of `spec` as the lab submits it (with the new-run defaults applied)."""
    parsed = ExperimentSpec.model_validate(with_new_run_defaults(spec))
    return footprint_estimate(parsed, settings.keep_full_checkpoints).total


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """A quota of two and a half FedGen runs of make_spec, at most 3 queued runs each."""
    one = _estimate(FEDGEN, settings)
    return settings.model_copy(
        update={"quota_bytes": one * 5 // 2, "max_queued_runs_per_member": 3}
    )


def _only_error(r: Any, code: int = 422) -> dict[str, Any]:
    assert r.status_code == code, r.text
    detail = r.json()["detail"]
    if code != 422:
        return {"msg": detail}
    assert len(detail) == 1, detail
    return dict(detail[0])


def test_a_run_over_the_quota_is_422_with_estimate_usage_and_limit(
    client: TestClient, auth: dict[str, str], tokens: dict[str, str], settings: Settings
) -> None:
    """Two runs fit; the third's estimate on top of the two reserved is over: 422 naming the
    field and giving the figures; nothing is queued. Another member is not affected."""
    one = _estimate(FEDGEN, settings)
    for _ in range(2):
        ok = client.post(f"{API}/runs", json={"spec": FEDGEN}, headers=auth)
        assert ok.status_code == 202, ok.text
    err = _only_error(client.post(f"{API}/runs", json={"spec": FEDGEN}, headers=auth))

    assert err["field"].startswith("spec")
    assert f"estimated footprint {format_bytes(one)} of this run" in err["msg"]
    assert f"+ usage {format_bytes(2 * one)} " in err["msg"]
    assert f"(stored 0 B + {format_bytes(2 * one)} still to come" in err["msg"]
    assert re.search(
        rf"is over the limit FEDGEN_QUOTA_BYTES = {format_bytes(settings.quota_bytes)};",
        err["msg"],
    ), err["msg"]
    me = client.get(f"{API}/me", headers=auth).json()
    assert (me["usage_bytes"], me["reserved_bytes"], me["queued_runs"]) == (0, 2 * one, 2)
    bob = {"Authorization": f"Bearer {tokens['bob']}"}
    assert client.post(f"{API}/runs", json={"spec": FEDGEN}, headers=bob).status_code == 202


def test_the_field_is_what_drives_the_estimate(client: TestClient, auth: dict[str, str]) -> None:
    """10,000 rounds of per-round rows: `spec.rounds`; a generator checkpoint every round:
    `spec.checkpoint_every`."""
    long = make_spec(rounds=10_000, checkpoint_every=0)
    many = make_spec(
        algorithm={"name": "fedgen", "hidden_dim": 4096}, rounds=2000, checkpoint_every=1
    )
    by_rounds = _only_error(client.post(f"{API}/runs", json={"spec": long}, headers=auth))
    by_generator = _only_error(client.post(f"{API}/runs", json={"spec": many}, headers=auth))
    assert by_rounds["field"] == "spec.rounds", by_rounds
    assert by_generator["field"] == "spec.checkpoint_every", by_generator
    assert re.search(rf"estimated footprint {SIZE} of this run \+ usage 0 B = ", by_rounds["msg"])


def test_a_sweep_counts_all_its_runs(
    client: TestClient, auth: dict[str, str], enqueued: list[tuple[str, str]], settings: Settings
) -> None:
    """Three runs of 1x the estimate each are over 2.5x: 422 on `grid` with their sum; a
    study (a sweep) is checked the same way."""
    one = _estimate(FEDGEN, settings)
    body = {"name": "s", "base": FEDGEN, "grid": {"seed": [1, 2, 3]}}
    err = _only_error(client.post(f"{API}/sweeps", json=body, headers=auth))
    assert err["field"] == "grid"
    assert (
        f"estimated footprint {format_bytes(3 * one)} of the sweep's 3 runs + usage 0 B"
        in (err["msg"])
    )
    assert enqueued == []
    assert client.get(f"{API}/sweeps", headers=auth).json()["count"] == 0
    body["grid"] = {"seed": [1, 2]}
    assert client.post(f"{API}/sweeps", json=body, headers=auth).status_code == 202


def test_queued_runs_over_the_cap_are_429(
    client: TestClient, auth: dict[str, str], tokens: dict[str, str], session: Session
) -> None:
    """3 queued at most: a sweep of 2 after 2 runs is refused with the count and the limit;
    once one has started, one more fits."""
    small = make_spec()
    for _ in range(2):
        assert client.post(f"{API}/runs", json={"spec": small}, headers=auth).status_code == 202
    body = {"name": "s", "base": small, "grid": {"seed": [1, 2]}}
    r = client.post(f"{API}/sweeps", json=body, headers=auth)
    err = _only_error(r, 429)
    assert r.headers["Retry-After"].isdigit()
    assert (
        "2 of your runs are queued and this submission adds 2: 4 is over the limit " in (err["msg"])
    )
    assert "FEDGEN_MAX_QUEUED_RUNS_PER_MEMBER = 3" in err["msg"]
    assert client.post(f"{API}/runs", json={"spec": small}, headers=auth).status_code == 202
    assert client.post(f"{API}/runs", json={"spec": small}, headers=auth).status_code == 429
    me = client.get(f"{API}/me", headers=auth).json()
    assert (me["queued_runs"], me["max_queued_runs"]) == (3, 3)
    session.execute(update(Run).where(Run.status == "queued").values(status="running"))
    session.commit()
    assert client.post(f"{API}/runs", json={"spec": small}, headers=auth).status_code == 202


def _write(
    session: Session, run_id: uuid.UUID, rnd: int, users: int, ckpts: list[dict[str, Any]]
) -> None:
    metrics_repo.write_round(
        session,
        run_id,
        "tok",
        round_=rnd,
        metrics={"test_acc": 0.5},
        users=[
            {"user": u, "test_acc": 0.5, "test_loss": 1.0, "num_test": 4, "selected": True}
            for u in range(users)
        ],
        checkpoints=ckpts,
        lease_s=60,
        keep_full=1,
    )
    session.commit()


def _full(rnd: int, size: int) -> dict[str, Any]:
    return {"kind": "full", "size": size, "sha256": "0" * 64, "data": bytes(size), "round": rnd}


def test_me_usage_grows_with_rounds_and_goes_when_purged(
    client: TestClient,
    auth: dict[str, str],
    session: Session,
    factory: sessionmaker[Session],
    settings: Settings,
) -> None:
    """Each new round adds its rows and checkpoints to /me's usage; a replay adds nothing; a
    pruned full checkpoint comes off; a trashed run still counts; purged, it is gone."""
    rid = client.post(f"{API}/runs", json={"spec": make_spec()}, headers=auth).json()["id"]
    run_id = uuid.UUID(rid)
    session.execute(update(Run).where(Run.id == run_id).values(status="running", lease_token="tok"))
    session.commit()

    def usage() -> int:
        return int(client.get(f"{API}/me", headers=auth).json()["usage_bytes"])

    per_round = round_bytes(3)
    assert usage() == 0
    _write(session, run_id, 0, 3, [])
    assert usage() == per_round
    _write(session, run_id, 1, 3, [_full(1, 1000)])
    assert usage() == 2 * per_round + 1000
    _write(session, run_id, 1, 3, [_full(1, 1000)])  # a replay
    assert usage() == 2 * per_round + 1000
    _write(session, run_id, 2, 3, [_full(2, 3000)])  # keep_full=1: round 1's goes
    assert usage() == 3 * per_round + 3000
    stored = session.get(Run, run_id)
    assert stored is not None
    assert stored.stored_bytes == usage()

    assert client.delete(f"{API}/runs/{rid}", headers=auth).status_code == 204
    assert usage() == 3 * per_round + 3000  # in the trash: still stored, still counted
    report = trash_actions.purge_pass(factory, settings, older_than_days=0)
    assert report.runs == 1
    me = client.get(f"{API}/me", headers=auth).json()
    assert (me["usage_bytes"], me["reserved_bytes"], me["runs"]) == (0, 0, 0)


def test_me_and_usage_show_quota_and_members(
    client: TestClient, auth: dict[str, str], tokens: dict[str, str], settings: Settings
) -> None:
    """/me: name, admin flag, quota, cap; /usage: an admin sees every member, a member
    themselves."""
    me = client.get(f"{API}/me", headers=auth).json()
    assert me["name"] == "alice"
    assert me["is_admin"] is False
    assert me["quota_bytes"] == settings.quota_bytes
    assert me["quota_is_default"] is True
    assert me["max_queued_runs"] == 3
    admin = {"Authorization": f"Bearer {tokens['admin']}"}
    every = client.get(f"{API}/usage", headers=admin).json()
    assert sorted(u["name"] for u in every["data"]) == ["admin", "alice", "bob"]
    own = client.get(f"{API}/usage", headers=auth).json()
    assert [u["name"] for u in own["data"]] == ["alice"]
    assert own["count"] == 1


def test_readme_documents_the_settings_and_commands() -> None:
    """The settings table gives each variable with its real default; the CLI block the quota
    commands."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    defaults = Settings.model_fields
    quota = re.search(r"^\| `FEDGEN_QUOTA_BYTES` \| 50 GiB \((\d+)\) \|", readme, re.M)
    assert quota is not None
    assert int(quota[1]) == defaults["quota_bytes"].default == 50 << 30
    queued = re.search(r"^\| `FEDGEN_MAX_QUEUED_RUNS_PER_MEMBER` \| (\d+) \|", readme, re.M)
    assert queued is not None
    assert int(queued[1]) == defaults["max_queued_runs_per_member"].default
    assert "fedgen-lab quota set USER BYTES|default" in readme
    assert "`GET /me`, `GET /usage`" in readme
