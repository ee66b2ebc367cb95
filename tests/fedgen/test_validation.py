"""Validation data (`partition.val_fraction`) and the statistics chosen by it: the split is
disjoint from train and test and reproducible, a run reports val_acc/val_loss, `val_best`
equals a hand computation, `seed_std` equals numpy's ddof-1 std."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedgen.data.datasets import load_dataset
from fedgen.data.partition import Partition, build_partition
from fedgen.events import MemorySink
from fedgen.fidelity import resolve
from fedgen.runner import run
from fedgen.spec import SpecError
from fedgen.stats import curve_statistic, seed_std, val_best
from tests.support.specs import tiny_spec


def _split(val_fraction: float, data_seed: int = 42) -> tuple[Partition, Partition]:
    spec = tiny_spec(partition={"val_fraction": val_fraction, "data_seed": data_seed})
    ds = load_dataset(spec.data, spec.partition)
    return build_partition(ds, spec.partition), build_partition(ds, tiny_spec().partition)


def test_validation_split_disjoint_reproducible_and_fingerprinted() -> None:
    with_val, without = _split(0.2)
    again, _ = _split(0.2)
    other_seed, _ = _split(0.2, data_seed=7)
    assert without.val_indices == []
    for u, (tr, va, full) in enumerate(
        zip(with_val.train_indices, with_val.val_indices, without.train_indices, strict=True)
    ):
        # Carved from the user's own training data, nothing lost, nothing shared.
        assert set(tr.tolist()).isdisjoint(va.tolist())
        assert sorted([*tr.tolist(), *va.tolist()]) == sorted(full.tolist())
        assert va.size == max(1, int(0.2 * full.size))
        assert np.array_equal(again.val_indices[u], va)
        # The test split indexes the test set: the same as without validation data.
        assert np.array_equal(with_val.test_indices[u], without.test_indices[u])
    everyone_train = set(np.concatenate(with_val.train_indices).tolist())
    assert everyone_train.isdisjoint(np.concatenate(with_val.val_indices).tolist())
    assert with_val.fingerprint() == again.fingerprint() != without.fingerprint()
    assert other_seed.fingerprint() != with_val.fingerprint()
    # A split without validation data keeps the fingerprint it had before the field existed.
    assert without.fingerprint() == _split(0.0)[0].fingerprint()


def test_val_fraction_is_bounded() -> None:
    with pytest.raises(SpecError, match="val_fraction"):
        tiny_spec(partition={"val_fraction": 0.6})


@pytest.mark.slow
def test_run_reports_validation_and_val_best() -> None:
    sink = MemorySink()
    spec = tiny_spec(rounds=3, partition={"val_fraction": 0.2})
    summary = run(spec, sink)
    vals = [e.metrics["val_acc"] for e in sink.events]
    assert len(vals) == 4
    assert all(0.0 <= v <= 1.0 for v in vals)
    assert all(e.metrics["val_loss"] > 0 for e in sink.events)
    tests = [e.metrics["test_acc"] for e in sink.events]
    # The rounds the profile counts: before_training leaves round R (3) out.
    counted = 3 if resolve(spec).eval_timing == "before_training" else 4
    r = int(np.argmax(vals[:counted]))
    assert summary.val_best == tests[r]
    assert summary.val_best_round == r
    plain = MemorySink()
    assert math.isnan(run(tiny_spec(rounds=1), plain).val_best)
    assert "val_acc" not in plain.events[-1].metrics


def test_val_best_by_hand() -> None:
    test = [0.10, 0.50, 0.70, 0.65, 0.80, 0.60]
    val = [0.12, 0.45, 0.72, 0.74, 0.70, 0.74]
    # Best validation 0.74 first at round 3: test there is 0.65 (best test is 0.80 at 4).
    assert val_best(test, val) == (0.65, 3)
    assert curve_statistic(test, "val_best", val_accs=val) == 0.65
    # Under before_training round R (5 here) is not counted.
    assert val_best(test, [*val[:5], 0.99], "before_training", 5) == (0.65, 3)
    assert val_best(test, [0.1, 0.2, 0.3, 0.4, 0.5, 0.99], "before_training", 5) == (0.80, 4)
    assert math.isnan(val_best(test, None)[0])
    assert math.isnan(curve_statistic(test, "val_best"))


def test_seed_std_is_numpys_ddof_1() -> None:
    per_seed = [0.801, 0.7932, 0.8125, 0.7788, 0.805]
    assert seed_std(per_seed) == pytest.approx(float(np.std(per_seed, ddof=1)), abs=1e-15)
    assert math.isnan(seed_std([0.8]))
