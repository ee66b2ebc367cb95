"""The Submit form's `data.folder` fields: shown only for data.name 'folder' (FormField.only, of
data.name, read from the schema's if/then), classes as a count or names, and the spec built:
data.folder as an object for the folder dataset, no `folder` key for any other."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.conditional_fields import (
    beside_their_field,
    field_rule,
    names_text,
    parse_names,
    section_rules,
    single_option,
    sweeps_whole,
)
from dashboard.spec_form import fields_from_schema, split_errors
from dashboard.submit_page.form_checks import check
from dashboard.submit_page.spec_build import applies, build_spec, build_sweep
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.sweep import SweepSpec, expand

SCHEMA = ExperimentSpec.model_json_schema()
DEFAULTS: dict[str, Any] = parse_spec({}).model_dump(mode="json")
FIELDS = fields_from_schema(SCHEMA, DEFAULTS)
BY_PATH = {f.path: f for f in FIELDS}
SET_DATA = {k: v for k, v in DEFAULTS["data"].items() if v is not None}  # as the form sends it
FOLDER_PATHS = [
    "data.folder.path",
    "data.folder.classes",
    "data.folder.channels",
    "data.folder.image_size",
]
FOLDER = {
    "data.name": "folder",
    "data.folder.path": "/labs/shapes",
    "data.folder.classes": ["cat", "dog", "bird"],
    "data.folder.channels": 3,
    "data.folder.image_size": 32,
}


def _shown(algorithm: str, datasets: list[str]) -> list[str]:
    chosen = {"algorithm.name": [algorithm], "data.name": datasets}
    return [f.path for f in FIELDS if applies(f, chosen) and f.path.startswith("data.folder")]


def test_folder_fields_come_from_the_schema() -> None:
    """path, classes, channels, image size: in the Data column, with the schema's limits,
    defaults and descriptions, and belonging to data.name 'folder' as the schema's if/then says."""
    # Assert
    assert [f.path for f in FIELDS if f.path.startswith("data.folder")] == FOLDER_PATHS
    for path in FOLDER_PATHS:
        f = BY_PATH[path]
        assert (f.only, f.only_of, f.section) == (("folder",), "data.name", "data"), path
    channels, size = BY_PATH["data.folder.channels"], BY_PATH["data.folder.image_size"]
    assert (channels.minimum, channels.maximum, channels.default) == (1, 4, 1)
    assert (size.minimum, size.maximum, size.default) == (8, 256, 28)
    classes = BY_PATH["data.folder.classes"]
    assert classes.kind == "names"
    limits = (classes.minimum, classes.maximum, classes.min_items, classes.max_items)
    assert limits == (2, 1000, 2, 1000)
    assert "or their names" in classes.help
    assert "Allowed: a count 2..1000, or 2..1000 comma-separated names" in classes.help
    assert BY_PATH["data.folder.path"].help.startswith("The dataset's folder")
    assert BY_PATH["data.folder.path"].min_length == 1
    assert "Allowed: at least 8, at most 256." in size.help


def test_schema_rule_and_optional_section() -> None:
    """The if/then/else of DataSpec names folder's controlling field; `X | None` is walked."""
    data = SCHEMA["$defs"]["DataSpec"]
    assert section_rules(data) == {"folder": ("name", ("folder",))}
    assert section_rules(SCHEMA["$defs"]["FolderSpec"]) == {}
    assert single_option(data["properties"]["folder"]) == {"$ref": "#/$defs/FolderSpec"}
    assert single_option(data["properties"]["root"]) == {
        "maxLength": 4096,
        "pattern": "^[^\\x00]*$",
        "type": "string",
    }


def test_folder_fields_only_for_the_folder_dataset() -> None:
    """Shown for data.name folder (alone, or among a sweep's datasets), never otherwise."""
    assert _shown("fedavg", ["folder"]) == FOLDER_PATHS
    assert _shown("fedgen", ["mnist", "folder"]) == FOLDER_PATHS
    assert _shown("fedavg", ["fashion-mnist"]) == []
    assert _shown("fedavg", ["synthetic", "mnist"]) == []
    assert _shown("fedavg", []) == []  # data.name not drawn yet: not shown


def test_synthetic_fields_only_for_the_synthetic_dataset() -> None:
    """data.synthetic_samples and _classes carry the schema's `x-only-when` (one declaration,
    in DataSpec): shown for 'synthetic' (alone or among a sweep's datasets), never otherwise,
    and, unlike the folder's object, swept like any field."""
    data = SCHEMA["$defs"]["DataSpec"]["properties"]
    assert field_rule(data["synthetic_samples"]) == ("name", ("synthetic",))
    assert field_rule(data["root"]) is None
    for path in ("data.synthetic_samples", "data.synthetic_classes"):
        f = BY_PATH[path]
        assert (f.only, f.only_of) == (("synthetic",), "data.name"), path
        assert applies(f, {"data.name": ["synthetic"]})
        assert applies(f, {"data.name": ["mnist", "synthetic"]})
        assert not applies(f, {"data.name": ["fashion-mnist"]})
        assert not applies(f, {"data.name": ["folder"]})
        assert not sweeps_whole(f)
    assert all(sweeps_whole(BY_PATH[p]) for p in FOLDER_PATHS)
    assert not sweeps_whole(BY_PATH["algorithm.gen_batch_size"])


def test_synthetic_samples_swept_beside_datasets() -> None:
    """A sweep over two datasets and two sample counts: a plain grid axis, not a section."""
    # Execute
    base, grid = build_sweep(
        {"data.name": ["mnist", "synthetic"], "data.synthetic_samples": [500, 1000]},
        FIELDS,
        DEFAULTS,
    )
    # Assert
    assert grid == {"data.name": ["mnist", "synthetic"], "data.synthetic_samples": [500, 1000]}
    assert base["data"]["synthetic_samples"] == DEFAULTS["data"]["synthetic_samples"]


def test_folder_fields_are_drawn_under_the_dataset() -> None:
    """The Data column: Dataset, then the folder's fields, then the rest in schema order."""
    data = [f.path for f in beside_their_field(FIELDS) if f.section == "data"]
    assert data[: 1 + len(FOLDER_PATHS)] == ["data.name", *FOLDER_PATHS]
    assert sorted(data) == sorted(f.path for f in FIELDS if f.section == "data")
    assert len(beside_their_field(FIELDS)) == len(FIELDS)


@pytest.mark.parametrize(
    ("typed", "value"),
    [
        ("3", 3),
        (" 12 ", 12),
        ("cat,dog,bird", ["cat", "dog", "bird"]),
        (" cat , dog, ,bird ", ["cat", "dog", "bird"]),
        ("0, 1", ["0", "1"]),  # class folders named 0 and 1
        ("3.5", ["3.5"]),
        ("", None),
        ("  ", None),
    ],
)
def test_classes_parse_as_count_or_names(typed: str, value: Any) -> None:
    """A whole number is a count; anything else is comma-separated names; empty is nothing."""
    assert parse_names(typed) == value


def test_classes_text_round_trips() -> None:
    """What the box shows for a value parses back to it."""
    for value in (3, ["cat", "dog", "bird"]):
        assert parse_names(names_text(value)) == value
    assert names_text(None) == ""


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (1, "must be at least 2"),
        (1001, "must be at most 1000"),
        (["cat"], "needs at least 2 names (got 1), or a count"),
        (["cat", "a/b"], "each name must match the pattern ^[^\\x00/]*$ (got 'a/b')"),
        (["cat", "x" * 65], "each name must have at most 64 characters (got 65)"),
        (None, "is required"),
        (3, None),
        (["cat", "dog", "bird"], None),
    ],
)
def test_classes_checked_with_the_schemas_limits(value: Any, why: str | None) -> None:
    """The form refuses what the spec refuses, naming the limit; parse_spec agrees."""
    # Prepare
    values = {**FOLDER, "data.folder.classes": value}
    # Execute
    refused = check(BY_PATH["data.folder.classes"], value)
    # Assert
    assert refused == why
    if why is not None and value is not None:
        with pytest.raises(SpecError) as exc:
            parse_spec(build_spec(values, FIELDS, DEFAULTS))
        assert [loc for loc, _ in exc.value.errors] == ["data.folder.classes"]


def test_folder_spec_is_built_as_an_object() -> None:
    """data.name folder: data.folder holds the four fields, and the spec is valid."""
    # Execute
    spec = build_spec({"algorithm.name": "fedavg", **FOLDER}, FIELDS, DEFAULTS)
    # Assert
    assert spec["data"] == {
        **SET_DATA,
        "name": "folder",
        "folder": {
            "path": "/labs/shapes",
            "classes": ["cat", "dog", "bird"],
            "channels": 3,
            "image_size": 32,
        },
    }
    assert parse_spec(spec).data.folder is not None
    count = build_spec({**FOLDER, "data.folder.classes": 3}, FIELDS, DEFAULTS)
    assert count["data"]["folder"]["classes"] == 3


def test_other_datasets_send_no_folder_key() -> None:
    """Folder values left over from a dataset switch are not sent: the spec dumps as before."""
    # Execute
    spec = build_spec({**FOLDER, "data.name": "mnist"}, FIELDS, DEFAULTS)
    # Assert
    assert "folder" not in spec["data"]
    assert spec["data"] == {**SET_DATA, "name": "mnist"}
    mnist = {**DEFAULTS, "data": {**DEFAULTS["data"], "name": "mnist"}}
    assert parse_spec(spec).model_dump(mode="json") == mnist


def test_sweep_zips_the_folder_with_its_dataset() -> None:
    """A sweep over mnist and folder: one axis data.name,data.folder, every combination valid."""
    # Prepare
    lists = {k: [v] for k, v in FOLDER.items()}
    lists["data.name"], lists["seed"] = ["mnist", "folder"], [0, 1]
    # Execute
    base, grid = build_sweep(lists, FIELDS, DEFAULTS)
    specs = expand(SweepSpec(base=base, grid=grid), strict=True)
    # Assert
    assert "folder" not in base["data"]
    folder = {
        "path": "/labs/shapes",
        "classes": ["cat", "dog", "bird"],
        "channels": 3,
        "image_size": 32,
    }
    assert grid == {"seed": [0, 1], "data.name,data.folder": [["mnist", None], ["folder", folder]]}
    assert sorted((s.data.name, s.data.folder is not None) for s in specs) == [
        ("folder", True),
        ("folder", True),
        ("mnist", False),
        ("mnist", False),
    ]


def test_sweep_of_the_folder_alone_keeps_it_in_the_base() -> None:
    """Only the folder dataset: the folder is part of the base spec."""
    base, grid = build_sweep({k: [v] for k, v in {**FOLDER, "seed": 0}.items()}, FIELDS, DEFAULTS)
    assert base["data"]["folder"]["path"] == "/labs/shapes"
    assert grid == {}


def test_server_errors_on_folder_fields_are_shown_under_them() -> None:
    """The API's data.folder.<field> errors belong to the form's field; data.folder's own
    (e.g. 'required') are shown above the buttons, still naming it."""
    on_form, top = split_errors(
        {"data.folder.path": "x", "data.folder.classes": "y", "data.folder": "z"}, FIELDS
    )
    assert on_form == {"data.folder.path": "x", "data.folder.classes": "y"}
    assert top == {"data.folder": "z"}
