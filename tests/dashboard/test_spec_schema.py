"""The spec's JSON schema as typed nodes (dashboard.spec_schema): what the Submit form reads
of GET /spec/schema, parsed once, `$ref` resolved in the root's `$defs`."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from dashboard.spec_form import SpecChoices, choices_of
from dashboard.spec_schema import SchemaNode
from fedgen.spec import ExperimentSpec, parse_spec

RAW: dict[str, Any] = ExperimentSpec.model_json_schema()
ROOT = SchemaNode.of(RAW)


def test_parsed_once_and_dumps_back_to_its_json() -> None:
    """A node is the JSON it came from: it dumps back to it and compares equal to it."""
    assert ROOT.as_json() == RAW
    assert ROOT == RAW
    assert SchemaNode.of(ROOT) is ROOT  # a node is not parsed again


def test_ref_resolves_in_the_roots_defs() -> None:
    """`$ref` names a `$defs` entry of the root; a node without one resolves to itself."""
    data = ROOT.properties["data"]
    assert data.ref == "#/$defs/DataSpec"
    spec = data.resolve(ROOT)
    assert spec is ROOT.defs["DataSpec"]
    assert spec.type == "object"
    assert "name" in spec.properties
    assert spec.resolve(ROOT) is spec
    assert SchemaNode(ref="#/other/Thing").resolve(ROOT).ref == "#/other/Thing"


def test_any_of_nullable() -> None:
    """`X | None`: the non-null option is read through `non_null`, the null one `is_null`."""
    folder = ROOT.defs["DataSpec"].properties["folder"]
    assert folder.any_of is not None
    assert len(folder.any_of) == 2
    assert [o.is_null for o in folder.any_of] == [False, True]
    assert folder.non_null() == [{"$ref": "#/$defs/FolderSpec"}]
    assert folder.non_null()[0].resolve(ROOT) is ROOT.defs["FolderSpec"]
    plain = SchemaNode(type="integer")
    assert plain.non_null() == [plain]


def test_enum_and_const() -> None:
    """An enum lists its values; a const, even a null one, is stated (`has_const`)."""
    node = SchemaNode.of({"enum": ["a", "b"], "type": "string"})
    assert (node.enum, node.has_enum, node.has_const) == (["a", "b"], True, False)
    assert SchemaNode.of({"const": None}).has_const
    assert SchemaNode.of({"const": "fedavg"}).const == "fedavg"
    assert not SchemaNode().has_const
    assert not SchemaNode().has_enum


def test_bounds_under_their_python_names() -> None:
    """JSON Schema's camelCase limits read as snake_case attributes, ints kept ints."""
    node = SchemaNode.of(
        {
            "type": "number",
            "exclusiveMinimum": 0,
            "exclusiveMaximum": 1.5,
            "minimum": 1,
            "maximum": 4,
            "minLength": 1,
            "maxLength": 64,
            "pattern": "^x$",
            "minItems": 2,
            "maxItems": 32,
        }
    )
    assert (node.exclusive_minimum, node.exclusive_maximum) == (0, 1.5)
    assert isinstance(node.exclusive_minimum, int)
    assert (node.minimum, node.maximum, node.min_length, node.max_length) == (1, 4, 1, 64)
    assert (node.pattern, node.min_items, node.max_items) == ("^x$", 2, 32)
    rounds = ROOT.properties["rounds"]
    assert rounds.type == "integer"
    assert rounds.minimum == 1


def test_discriminator_and_conditionals() -> None:
    """The algorithm's discriminator maps names to `$ref`s; DataSpec's if/then/else and a
    field's `x-only-when` are read as attributes; other keys are kept as extras."""
    algorithm = ROOT.properties["algorithm"]
    assert algorithm.discriminator is not None
    assert algorithm.discriminator.property_name == "name"
    assert all(r.startswith("#/$defs/") for r in algorithm.discriminator.mapping.values())
    data = ROOT.defs["DataSpec"]
    assert data.if_ is not None
    assert data.then is not None
    assert data.else_ is not None
    assert "folder" in data.then.required
    assert data.properties["synthetic_samples"].only_when == {"name": ["synthetic"]}
    odd = SchemaNode.of({"type": "string", "x-unknown": 1})
    assert odd.as_json() == {"type": "string", "x-unknown": 1}


def test_frozen() -> None:
    """A node is read, never changed."""
    with pytest.raises(ValidationError):
        ROOT.properties["rounds"].minimum = 5  # type: ignore[misc]


def test_spec_choices_are_the_forms_choices() -> None:
    """The Runs page's algorithm and dataset filters offer what the Submit form offers."""
    defaults = parse_spec({}).model_dump(mode="json")
    choices = SpecChoices.of(ROOT, defaults)
    found = choices_of(RAW, defaults, ("algorithm.name", "data.name"))
    assert list(choices.algorithms) == found["algorithm.name"]
    assert list(choices.datasets) == found["data.name"]
    assert "fedavg" in choices.algorithms
    assert "mnist" in choices.datasets
    assert SpecChoices() == SpecChoices((), ())  # the API could not be read: no choices
