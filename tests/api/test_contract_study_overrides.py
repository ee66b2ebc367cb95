"""The contract's hooks leave out study overrides the API refuses by a rule the schema cannot
state (it depends on the study), and send every other case on to the API."""

from __future__ import annotations

from scripts.contract_hooks import _study_ok


def test_seeds_past_a_sweeps_limit_are_left_out() -> None:
    """table1-tuned is 198 runs a seed: 6 seeds overflow a sweep (the API's 422 names seeds)."""
    assert not _study_ok("table1-tuned", {"seeds": 6})
    assert not _study_ok("table1-tuned", {"seeds": 6.0, "rounds": 3327, "dataset": "synthetic"})
    assert _study_ok("table1-tuned", {"seeds": 5})


def test_other_cases_go_to_the_api() -> None:
    """Unknown studies, bad overrides and bodies that are not objects: the API judges them."""
    assert _study_ok("no-such-study", {"seeds": 6})
    assert _study_ok("table1", {"seeds": 0})
    assert _study_ok("table1", None)
    assert _study_ok("table1", {"seeds": 10})
