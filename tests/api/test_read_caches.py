"""The sweep readers' caches (issue 31) answer what reading afresh answers.

lab.spec_cache (a spec's flat fields and evaluation profile), lab.curve_cache (succeeded
runs' accuracy curves) and fedgen.specdict's quick comparison of values.
"""

from __future__ import annotations

import math

import pytest
from sqlalchemy.orm import Session

from fedgen.fidelity import resolve
from fedgen.spec import ExperimentSpec, parse_spec
from fedgen.specdict import differing_fields, flatten
from lab import curve_cache, spec_cache
from lab.models import Run
from lab.repository import metrics as metrics_repo
from tests.support.factories import create_run, create_user, make_spec, seed_rounds


@pytest.fixture(autouse=True)
def _fresh_caches() -> None:
    spec_cache.clear()
    curve_cache.clear()


@pytest.mark.parametrize("profile", ["paper", "official"])
def test_spec_cache_answers_as_parsing(profile: str) -> None:
    """Flat fields and (eval_timing, rounds) equal a fresh parse, first read and again."""
    # Prepare
    spec = parse_spec(make_spec(rounds=7, fidelity={"profile": profile})).model_dump(mode="json")
    model = ExperimentSpec.model_validate(spec)
    expected_flat = flatten(parse_spec(spec).model_dump(mode="json"))
    expected_profile = (resolve(model).eval_timing, model.rounds)
    # Execute
    first, again = spec_cache.flat_spec(spec), spec_cache.flat_spec(dict(reversed(spec.items())))
    profiles = [spec_cache.eval_profile(spec), spec_cache.eval_profile(spec)]
    # Assert
    assert first == again == expected_flat
    assert profiles == [expected_profile, expected_profile]


def test_spec_cache_hands_out_copies_and_none_for_invalid() -> None:
    """A caller changing its flat dict does not change the next answer; bad specs: None."""
    # Prepare
    spec = parse_spec(make_spec()).model_dump(mode="json")
    flat = spec_cache.flat_spec(spec)
    assert flat is not None
    # Execute
    flat["rounds"] = -1
    # Assert
    assert spec_cache.flat_spec(spec) == flatten(parse_spec(spec).model_dump(mode="json"))
    assert spec_cache.flat_spec({"rounds": "many"}) is None
    assert spec_cache.flat_spec({"rounds": "many"}) is None


@pytest.mark.parametrize(
    ("values", "differ"),
    [
        ([1, 1.0], True),  # JSON 1 vs 1.0
        ([1, True], True),
        ([0.0, -0.0], True),
        ([float("nan"), float("nan")], False),
        ([0.1, 0.1, 0.1], False),
        ([("a", 1), ("a", 1)], False),
        ([("a", 1), ("a", 1.0)], True),
        (["1", 1], True),
        ([None, None], False),
    ],
)
def test_differing_fields_compares_as_json(values: list[object], differ: bool) -> None:
    """Values differ exactly when their canonical JSON texts do."""
    # Execute
    out = differing_fields([{"x": v} for v in values])
    # Assert
    assert out == (["x"] if differ else [])


def _write(session: Session, run: Run, round_: int, acc: float) -> None:
    written = metrics_repo.write_round(
        session,
        run.id,
        "t",
        round_=round_,
        metrics={"test_acc": acc},
        users=[],
        checkpoints=[],
        lease_s=60,
    )
    session.commit()
    assert written


def test_curve_cache_follows_new_rounds(session: Session) -> None:
    """A succeeded run's curve is kept; a run's new round (current_round) is read afresh."""
    # Prepare
    alice, _ = create_user(session, "alice")
    done = create_run(session, alice)
    live = create_run(session, alice)
    seed_rounds(session, done, [0.1, 0.2, 0.3])
    session.query(Run).filter(Run.id == live.id).update({"lease_token": "t", "status": "running"})
    _write(session, live, 0, 0.5)
    runs = {r.id: r for r in session.query(Run).all()}
    # Execute
    first = curve_cache.acc_curves(session, [runs[done.id], runs[live.id]])
    _write(session, live, 1, 0.6)
    session.expire_all()
    runs = {r.id: r for r in session.query(Run).all()}
    second = curve_cache.acc_curves(session, [runs[done.id], runs[live.id]])
    first[done.id].append(9.0)  # the caller's list, not the cache's
    third = curve_cache.acc_curves(session, [runs[done.id]])
    # Assert
    assert second == metrics_repo.acc_curves(session, [done.id, live.id])
    assert second[live.id] == [0.5, 0.6]
    assert third[done.id] == [0.1, 0.2, 0.3]


def test_val_and_cost_cache_answers_as_reading_the_rounds(session: Session) -> None:
    """A succeeded run's validation curve and cost totals, first read and from the cache,
    equal the stored rounds read afresh (metric_curves + fedgen.cost.run_cost)."""
    # Prepare
    alice, _ = create_user(session, "alice")
    run = create_run(session, alice, partition={"val_fraction": 0.1})
    plain = create_run(session, alice)
    seed_rounds(
        session,
        run,
        [0.1, 0.2, 0.3],
        extra=lambda r: {"val_acc": 0.1 * r, "bytes_up": 1e6 * r, "time_server_ms": 5.0},
    )
    seed_rounds(session, plain, [0.1, 0.2])
    runs = [session.get(Run, run.id), session.get(Run, plain.id)]
    # Execute
    first = curve_cache.val_and_cost(session, runs)  # type: ignore[arg-type]
    first[run.id][0].append(9.0)  # the caller's list, not the cache's
    again = curve_cache.val_and_cost(session, runs)  # type: ignore[arg-type]
    # Assert
    fresh = metrics_repo.metric_curves(session, [run.id], curve_cache.READ)[run.id]
    vals, cost = again[run.id]
    assert vals == pytest.approx(fresh["val_acc"])
    assert vals == pytest.approx([0.0, 0.1, 0.2])
    assert cost["mb_up"] == pytest.approx(3.0)
    assert cost["server_s"] == pytest.approx(0.015)
    assert again[plain.id][0] == []  # no validation data
    assert math.isnan(again[plain.id][1]["mb_up"])
