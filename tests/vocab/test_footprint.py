"""vocab.footprint: what a whole run stores: which generator checkpoints a retention rule keeps,
the generator and final-model checkpoint estimates against the real ones a run writes, and
the field that drives a large footprint."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from fedgen.runner import Simulation
from fedgen.sizes import estimate_checkpoint_bytes
from fedgen.spec import ExperimentSpec
from tests.support.specs import tiny_spec
from vocab.footprint import (
    KEEP_ALL,
    KeepRule,
    checkpoint_rounds,
    footprint_estimate,
    footprint_field,
    generator_checkpoint_bytes,
    kept_checkpoint_rounds,
    model_checkpoint_bytes,
    parse_keep_rule,
    round_bytes,
)


def test_checkpoint_rounds_follow_the_runner() -> None:
    """Every multiple of checkpoint_every after 0, and the last round; 0: the last only."""
    assert checkpoint_rounds(200, 50) == [50, 100, 150, 200]
    assert checkpoint_rounds(7, 3) == [3, 6, 7]
    assert checkpoint_rounds(10, 0) == [10]
    assert checkpoint_rounds(5, 1) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("rounds", "every", "rule", "kept"),
    [
        (200, 50, "all", [50, 100, 150, 200]),
        (100, 1, "every:10,last:3", [10, 20, 30, 40, 50, 60, 70, 80, 90, 98, 99, 100]),
        (95, 5, "every:20", [20, 40, 60, 80, 95]),  # the final one is always kept
        (12, 1, "last:2", [11, 12]),
        (12, 1, "last:0", [12]),
        (3, 1, "last:10", [1, 2, 3]),
    ],
)
def test_kept_checkpoint_rounds(rounds: int, every: int, rule: str, kept: list[int]) -> None:
    assert kept_checkpoint_rounds(rounds, every, rule) == kept
    assert kept_checkpoint_rounds(rounds, every, parse_keep_rule(rule)) == kept


def test_parse_keep_rule() -> None:
    assert parse_keep_rule(" all ") == KEEP_ALL
    assert parse_keep_rule("every:10, last:3") == KeepRule(every=10, last=3)
    assert parse_keep_rule("last:5") == KeepRule(last=5)
    for bad, says in [
        ("every:0", "'every:0': every must be between 1 and 10000"),
        ("last:-1", "'last:-1': last must be between 0 and 10000"),
        ("every:ten", "'every:ten': 'ten' is not a whole number"),
        ("first:3", "'first:3': expected 'all' or 'every:N' and/or 'last:K'"),
        ("last:2,last:3", "'last:3': expected"),
    ]:
        with pytest.raises(ValueError, match=says):
            parse_keep_rule(bad)


def _real_small_checkpoints(spec: ExperimentSpec) -> dict[str, int]:
    """Sizes of the generator and final-model checkpoints a run of `spec` writes at its last
    round (their shapes, hence sizes, are the same whether trained or not: no round is run)."""
    sim = Simulation(spec)
    out: dict[str, int] = {c.kind: len(c.data) for c in sim.checkpoints_for(spec.rounds)}
    out.pop("full")
    return out


CASES: list[dict[str, Any]] = [
    {"algorithm": {"name": "fedgen"}},
    {"algorithm": {"name": "fedgen", "hidden_dim": 1024, "embedding": True}},
    {"algorithm": {"name": "fedgen"}, "fidelity": {"profile": "paper"}},
    {"model": {"name": "mcmahan-cnn"}},
    {},
]


@pytest.mark.parametrize("overrides", CASES, ids=str)
def test_small_checkpoint_estimates_are_at_most_ten_percent_above_the_real_ones(
    overrides: dict[str, Any],
) -> None:
    spec = tiny_spec(**overrides)
    real = _real_small_checkpoints(spec)
    assert real["model"] <= model_checkpoint_bytes(spec) <= 1.1 * real["model"]
    estimate = generator_checkpoint_bytes(spec)
    if "generator" not in real:
        assert estimate == 0
        return
    assert real["generator"] <= estimate <= 1.1 * real["generator"], (real, estimate)


def test_footprint_counts_what_the_run_keeps() -> None:
    """keep_full=1 of the 2 written, every generator checkpoint, the model, rounds 0..R."""
    spec = tiny_spec(algorithm={"name": "fedgen"})  # 4 rounds, checkpoint_every 2, 5 users
    f = footprint_estimate(spec, keep_full=1)
    assert f.full == estimate_checkpoint_bytes(spec)
    assert f.generator == 2 * generator_checkpoint_bytes(spec)
    assert f.model == model_checkpoint_bytes(spec)
    assert f.rounds == 5 * round_bytes(5)
    assert f.total == f.full + f.generator + f.model + f.rounds
    fewer = footprint_estimate(spec, keep_full=5, keep_generator="last:1")
    assert fewer.full == 2 * estimate_checkpoint_bytes(spec)  # only 2 are ever written
    assert fewer.generator == generator_checkpoint_bytes(spec)


def test_the_field_driving_the_footprint() -> None:
    many_rounds = ExperimentSpec.model_validate({"rounds": 10_000, "checkpoint_every": 0})
    generators = ExperimentSpec.model_validate(
        {
            "algorithm": {"name": "fedgen", "hidden_dim": 4096},
            "rounds": 10_000,
            "checkpoint_every": 1,
        }
    )
    users = ExperimentSpec.model_validate(
        {"model": {"name": "mcmahan-cnn"}, "share": "predictor", "partition": {"num_users": 100}}
    )
    for spec, field in [
        (many_rounds, "rounds"),
        (generators, "checkpoint_every"),
        (users, "partition.num_users"),
    ]:
        assert footprint_field(spec, footprint_estimate(spec, 2)) == field
    big = footprint_estimate(generators, 2)
    assert big.total > 10 * 1024**3  # 10,000 generator checkpoints of 1.3 MB


def test_footprint_does_not_import_torch() -> None:
    code = (
        "import sys; from vocab.footprint import footprint_estimate; "
        "from fedgen.spec import ExperimentSpec; "
        "footprint_estimate(ExperimentSpec.model_validate({'algorithm': {'name': 'fedgen'}}), 2); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
