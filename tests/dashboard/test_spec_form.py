"""The Submit form's pure model: fields from the spec's schema, spec and sweep builders, value lists."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.spec_form import (
    applies,
    build_spec,
    build_sweep,
    fields_from_schema,
    parse_list,
    split_errors,
    sweep_size,
)
from fedgen.spec import ExperimentSpec, parse_spec
from fedgen.specdict import flatten

DEFAULTS: dict[str, Any] = parse_spec({}).model_dump(mode="json")
FIELDS = fields_from_schema(ExperimentSpec.model_json_schema(), DEFAULTS)
BY_PATH = {f.path: f for f in FIELDS}


def test_fields_cover_every_spec_field() -> None:
    """Every dotted field of the defaults (and each algorithm's parameters) has an input."""
    paths = set(BY_PATH)
    missing = {f for f in flatten(DEFAULTS) if f not in paths} - {"tags", "note"}
    assert missing == set()
    for name in ("fedgen", "fedprox", "feddf", "feddistill"):
        params = parse_spec({"algorithm": {"name": name}}).model_dump(mode="json")["algorithm"]
        assert {f"algorithm.{k}" for k in params} <= paths, name


def test_fields_take_choices_and_bounds_from_the_schema() -> None:
    """Literals become choices; ge/le/gt become bounds; None-able knobs are nullable."""
    assert BY_PATH["fidelity.profile"].choices == ("paper", "official")
    assert BY_PATH["fidelity.profile"].default == "official"
    assert (BY_PATH["rounds"].minimum, BY_PATH["rounds"].maximum) == (1, 10_000)
    assert BY_PATH["lr"].exclusive_minimum == 0.0
    assert BY_PATH["fidelity.eval_timing"].nullable
    assert BY_PATH["algorithm.gen_batch_size"].only == ("fedgen",)
    assert BY_PATH["algorithm.reg_alpha"].only == ("feddistill", "feddistill-plus")
    assert "heldout" in BY_PATH["algorithm.proxy"].choices
    assert applies(BY_PATH["algorithm.mu"], ["fedprox"])
    assert not applies(BY_PATH["algorithm.mu"], ["fedgen"])


def test_untouched_values_build_the_defaults() -> None:
    """Every field at its default (FedAvg) builds exactly GET /spec/defaults' spec."""
    values = {f.path: f.default for f in FIELDS if applies(f, ["fedavg"])}
    spec = {**build_spec(values, FIELDS, DEFAULTS), "tags": [], "note": ""}
    assert spec == DEFAULTS


def test_build_spec_keeps_only_the_algorithms_params() -> None:
    """FedGen's B_G goes into algorithm; FedProx's mu does not; the rest keeps its defaults."""
    # Execute
    spec = build_spec({"algorithm.name": "fedgen", "algorithm.gen_batch_size": 16, "algorithm.mu": 0.1,
                       "partition.alpha": 0.5, "data.name": "mnist", "seed": 3}, FIELDS, DEFAULTS)  # fmt: skip
    # Assert
    assert spec["algorithm"] == {"name": "fedgen", "gen_batch_size": 16}
    assert spec["partition"] == {**DEFAULTS["partition"], "alpha": 0.5}
    assert spec["data"]["name"] == "mnist"
    assert spec["rounds"] == DEFAULTS["rounds"]
    assert parse_spec(spec).algorithm.name == "fedgen"


def test_build_sweep_grid() -> None:
    """Lists become grid entries; algorithms expand with their own parameter lists."""
    # Execute
    base, grid = build_sweep({"algorithm.name": ["fedavg", "fedgen"], "algorithm.gen_batch_size": [16, 32],
                              "seed": [0, 1, 2], "rounds": [5]}, FIELDS, DEFAULTS)  # fmt: skip
    # Assert
    assert base["rounds"] == 5
    assert grid["seed"] == [0, 1, 2]
    assert grid["algorithm"] == [{"name": "fedavg"}, {"name": "fedgen", "gen_batch_size": 16},
                                 {"name": "fedgen", "gen_batch_size": 32}]  # fmt: skip
    assert sweep_size(grid) == 9


def test_single_algorithm_sweep_goes_to_base() -> None:
    """One algorithm with one parameter value is part of the base spec."""
    base, grid = build_sweep(
        {"algorithm.name": ["fedgen"], "algorithm.gen_batch_size": [32], "seed": [0]},
        FIELDS,
        DEFAULTS,
    )
    assert base["algorithm"] == {"name": "fedgen", "gen_batch_size": 32}
    assert grid == {}


def test_parse_list() -> None:
    """Comma or semicolon lists of numbers; bad items are named."""
    assert parse_list("0.1, 1;10", "float") == [0.1, 1.0, 10.0]
    assert parse_list("1, 2.0", "int") == [1, 2]
    with pytest.raises(ValueError, match="'2.5' is not a valid integer"):
        parse_list("1, 2.5", "int")
    with pytest.raises(ValueError, match="at least one"):
        parse_list(" , ", "int")


def test_split_errors() -> None:
    """Errors of form fields vs the rest."""
    assert split_errors({"seed": "x", "(root)": "y"}, FIELDS) == ({"seed": "x"}, {"(root)": "y"})
