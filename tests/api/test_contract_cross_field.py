"""The contract hooks leave out specs that break only rules between fields, named or not.

A rule between fields (fedgen.spec_base.CrossFieldError) is reported with the same message on
each field it names: the hooks take that for a cross-field rule, so a rule added to the spec
(a model's input shape against the dataset's, a proxy's against the data's) does not turn
`make contract` red until someone lists its message in scripts/contract_hooks.py.
"""

from __future__ import annotations

from scripts.contract_hooks import _cross_field_only

SHAPES = "model m takes square images, not 1x1x60 inputs: not a square image (data.name=d)"


def test_one_message_on_each_field_it_names_is_a_rule_between_them() -> None:
    assert _cross_field_only([("model.name", SHAPES), ("data.name", SHAPES)])
    assert _cross_field_only([("base.model.name", SHAPES), ("base.data.name", SHAPES)])


def test_other_errors_are_still_sent_to_the_api() -> None:
    assert not _cross_field_only([("model.name", SHAPES)])
    assert not _cross_field_only([("model.name", SHAPES), ("data.name", SHAPES), ("rounds", "x")])
    assert not _cross_field_only([("a", "unknown field"), ("b", "unknown field")])
    assert not _cross_field_only([])


def test_a_grid_value_against_the_base_is_a_rule_between_them() -> None:
    """A sweep names the grid value on the base field's message: still one rule on both."""
    grid_msg = SHAPES
    base_msg = f"{SHAPES} (with grid.model.name[1]='m')"
    assert _cross_field_only([("grid.model.name[1]", grid_msg), ("base.data.name", base_msg)])
    assert not _cross_field_only([("grid.model.name[1]", grid_msg), ("rounds", "x")])
