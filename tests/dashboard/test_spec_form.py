"""The Submit form's pure builders: specs, sweep grids and value lists."""

from __future__ import annotations

import pytest

from dashboard.spec_form import build_spec, build_sweep, parse_list, split_errors, sweep_size


def test_build_spec_keeps_only_the_algorithms_params() -> None:
    """FedGen's B_G goes into algorithm; FedProx's mu does not; synthetic size only for synthetic."""
    # Execute
    spec = build_spec({"algorithm.name": "fedgen", "algorithm.gen_batch_size": 16, "algorithm.mu": 0.1,
                       "partition.alpha": 0.5, "data.name": "mnist", "data.synthetic_samples": 10, "seed": 3})  # fmt: skip
    # Assert
    assert spec == {"partition": {"alpha": 0.5}, "data": {"name": "mnist"}, "seed": 3,
                    "algorithm": {"name": "fedgen", "gen_batch_size": 16}}  # fmt: skip


def test_build_sweep_grid() -> None:
    """Lists become grid entries; algorithms expand with their own parameter lists."""
    # Execute
    base, grid = build_sweep({"algorithm.name": ["fedavg", "fedgen"], "algorithm.gen_batch_size": [16, 32],
                              "seed": [0, 1, 2], "rounds": [5]})  # fmt: skip
    # Assert
    assert base["rounds"] == 5
    assert "seed" not in base
    assert grid["seed"] == [0, 1, 2]
    assert grid["algorithm"] == [{"name": "fedavg"}, {"name": "fedgen", "gen_batch_size": 16},
                                 {"name": "fedgen", "gen_batch_size": 32}]  # fmt: skip
    assert sweep_size(grid) == 9


def test_single_algorithm_sweep_goes_to_base() -> None:
    """One algorithm with one parameter value is part of the base spec."""
    base, grid = build_sweep(
        {"algorithm.name": ["fedgen"], "algorithm.gen_batch_size": [32], "seed": [0]}
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
    assert split_errors({"seed": "x", "(root)": "y"}) == ({"seed": "x"}, {"(root)": "y"})
