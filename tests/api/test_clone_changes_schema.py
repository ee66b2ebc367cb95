"""A clone's `changes` schema: any subset of the spec, merged over the run's own spec."""

from __future__ import annotations

from typing import Any

import jsonschema

from api.main import create_app


def _changes_data_schema() -> dict[str, Any]:
    doc = create_app().openapi()
    schemas = doc["components"]["schemas"]
    data = schemas["SpecChanges"]["properties"]["data"]
    return {**data, "components": {"schemas": schemas}}


def test_changes_may_name_the_folder_dataset_without_its_folder() -> None:
    """The run being cloned holds data.folder: `{"name": "folder"}` alone is a valid change,
    where a whole spec's data section must carry its folder."""
    # Prepare
    changes = _changes_data_schema()
    spec_data = create_app().openapi()["components"]["schemas"]["DataSpec"]
    # Execute
    changes_errors = list(jsonschema.Draft202012Validator(changes).iter_errors({"name": "folder"}))
    spec_errors = list(jsonschema.Draft202012Validator(spec_data).iter_errors({"name": "folder"}))
    # Assert
    assert changes_errors == []
    assert spec_errors, "a whole spec's data section still requires its folder"


def test_changes_keep_the_data_fields_and_their_limits() -> None:
    """Unknown data fields are still refused, and each field keeps its own schema."""
    changes = _changes_data_schema()
    validator = jsonschema.Draft202012Validator(changes)
    assert list(validator.iter_errors({"nosuch": 1}))
    assert list(validator.iter_errors({"synthetic_samples": -5}))
