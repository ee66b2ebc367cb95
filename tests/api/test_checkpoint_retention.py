"""FEDGEN_KEEP_GENERATOR_CHECKPOINTS is validated naming the setting and the wrong part, and the
pruned report (lab/checkpoint_retention.py) tells only what a run wrote and no longer has."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lab.checkpoint_retention import pruned
from lab.config import Settings
from vocab.footprint import KEEP_ALL, parse_keep_rule


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("every:0", "every must be between 1 and 10000"),
        ("last:-1", "last must be between 0 and 10000"),
        ("every:10,every:5", "each once"),
        ("keep:3", "expected 'all' or 'every:N'"),
        ("every:ten", "'ten' is not a whole number"),
    ],
)
def test_a_wrong_rule_names_the_setting_and_the_part(value: str, said: str) -> None:
    with pytest.raises(ValidationError) as err:
        Settings(keep_generator_checkpoints=value)
    assert "FEDGEN_KEEP_GENERATOR_CHECKPOINTS" in str(err.value)
    assert said in str(err.value)


def test_the_default_is_documented_and_parses() -> None:
    rule = Settings().generator_keep_rule
    assert (rule.every, rule.last) == (50, 5)
    assert Settings(keep_generator_checkpoints="all").generator_keep_rule == KEEP_ALL


def test_pruned_tells_what_was_written_and_is_gone() -> None:
    """A running FedGen run at round 7 (checkpoint_every 2): full at 2, 4, 6 written, 6 kept;
    generators at 2, 4, 6 written, 4 and 6 kept."""
    spec = {"rounds": 10, "checkpoint_every": 2}
    stored = [(6, "full"), (4, "generator"), (6, "generator")]
    rule = parse_keep_rule("every:4")
    out = {p.kind: p for p in pruned(spec, 7, stored, 1, rule, "every:4")}
    assert out["full"].rounds == [2, 4]
    assert out["generator"].rounds == [2]
    assert "multiples of 4" in out["generator"].reason


def test_nothing_pruned_is_reported_for_a_run_without_generators() -> None:
    """A FedAvg run stores no generator checkpoints: none is reported pruned; a run with all
    its full checkpoints reports none either."""
    spec = {"rounds": 4, "checkpoint_every": 2}
    stored = [(2, "full"), (4, "full"), (4, "model")]
    assert pruned(spec, 4, stored, 2, parse_keep_rule("last:1"), "last:1") == []
