"""ExperimentSpec: validation errors name field, value and limit; hashing is stable."""

from __future__ import annotations

import json

import pytest

from fedgen.fidelity import resolve
from fedgen.spec import ExperimentSpec, SpecError, load_spec, parse_spec
from fedgen.specdict import group_key
from fedgen.sweep import SweepSpec, expand


def _errors(data: object) -> dict[str, str]:
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    return dict(info.value.errors)


def test_out_of_range_names_field_value_and_limit() -> None:
    """A too-large value reports the dotted field, the value and the bound."""
    errs = _errors({"partition": {"num_users": 50000}, "rounds": 0})
    assert "less than or equal to 10000" in errs["partition.num_users"]
    assert "50000" in errs["partition.num_users"]
    assert "greater than or equal to 1" in errs["rounds"]


def test_unknown_field_and_wrong_type() -> None:
    """Unknown fields are refused; wrong types are named."""
    errs = _errors({"bogus": 1, "batch_size": "big"})
    assert errs["bogus"] == "unknown field"
    assert "batch_size" in errs


def test_unknown_algorithm_lists_the_valid_ones() -> None:
    """The discriminated union says which names exist."""
    errs = _errors({"algorithm": {"name": "fedx"}})
    assert "fedgen" in errs["algorithm"]


def test_cross_field_limits() -> None:
    """users_per_round cannot exceed num_users; predictor sharing only where supported."""
    assert "users_per_round" in str(
        _errors({"users_per_round": 30, "partition": {"num_users": 20}})
    )
    assert "share" in str(_errors({"share": "predictor", "algorithm": {"name": "fedprox"}}))


def test_not_a_mapping() -> None:
    """A list is not a spec."""
    assert "(root)" in _errors([1, 2])


def test_hash_ignores_key_order_and_defaults() -> None:
    """Same spec, different spelling: same hash."""
    a = parse_spec(
        {"rounds": 5, "seed": 1, "partition": {"alpha": 1.0, "num_users": 4}, "users_per_round": 2}
    )
    b = parse_spec(
        {
            "users_per_round": 2,
            "partition": {"num_users": 4, "alpha": 1},
            "seed": 1,
            "rounds": 5,
            "tags": [],
        }
    )
    assert a.spec_hash() == b.spec_hash()
    assert a.spec_hash() != parse_spec({"rounds": 6}).spec_hash()
    assert json.loads(a.canonical_json())["rounds"] == 5


def test_load_yaml_and_json(tmp_path) -> None:
    """Files load from YAML and JSON; a broken file is a SpecError naming the format."""
    (tmp_path / "a.yaml").write_text("rounds: 3\nalgorithm: {name: fedprox, mu: 0.1}\n")
    (tmp_path / "b.json").write_text('{"rounds": 3, "algorithm": {"name": "fedprox", "mu": 0.1}}')
    assert load_spec(tmp_path / "a.yaml") == load_spec(tmp_path / "b.json")
    (tmp_path / "c.json").write_text("{rounds: ")
    with pytest.raises(SpecError, match="JSON"):
        load_spec(tmp_path / "c.json")


def test_fidelity_profiles_resolve_and_override() -> None:
    """A knob set in the spec wins over the profile; other knobs follow the profile."""
    official = resolve(parse_spec({"algorithm": {"name": "fedgen"}}))
    assert (official.noise, official.aggregation, official.generator_steps) == (
        "uniform",
        "samples",
        50,
    )
    paper = resolve(
        parse_spec(
            {
                "algorithm": {"name": "fedgen", "noise": "uniform"},
                "fidelity": {"profile": "paper"},
                "lr_decay": 0.5,
            }
        )
    )
    assert (paper.noise, paper.aggregation, paper.lr_decay) == ("uniform", "uniform", 0.5)
    emnist = resolve(
        parse_spec({"data": {"name": "emnist-letters"}, "algorithm": {"name": "fedgen"}})
    )
    assert (emnist.generator_lr, emnist.client_kl_weight) == (1e-4, 1.0)


def test_fedgen_knobs_live_with_fedgen() -> None:
    """A FedAvg spec carries no generator settings; a stored spec's unset ones still load."""
    fedavg = ExperimentSpec()
    assert "generator_lr" not in fedavg.model_dump()["fidelity"]
    assert "generator_lr" not in resolve(fedavg).as_dict()
    with pytest.raises(SpecError, match="fidelity.generator_lr: unknown field"):
        parse_spec({"fidelity": {"generator_lr": 1e-3}})
    # Specs stored before the move: unset knobs are dropped, set ones move to FedGen's section.
    old = parse_spec(
        {"algorithm": {"name": "fedgen"}, "fidelity": {"generator_lr": 1e-3, "noise": None}}
    )
    assert old == parse_spec({"algorithm": {"name": "fedgen", "generator_lr": 1e-3}})
    assert parse_spec({"fidelity": {"noise": None}}) == ExperimentSpec()
    with pytest.raises(SpecError, match=r"generator_lr: Input should be less than or equal to 10"):
        parse_spec({"algorithm": {"name": "fedgen", "generator_lr": 100.0}})


def test_sweep_expands_and_groups() -> None:
    """A grid expands to the product; runs differing only by seed share a group."""
    sweep = SweepSpec(
        base={"rounds": 2}, grid={"algorithm": ["fedavg", "fedgen"], "seed": [0, 1, 2]}
    )
    specs = expand(sweep)
    assert len(specs) == 6
    assert {s.algorithm.name for s in specs} == {"fedavg", "fedgen"}
    assert len({group_key(s) for s in specs}) == 2


def test_sweep_errors_name_the_grid_value() -> None:
    """An invalid grid value is reported at its place in the grid; a combination that is
    invalid as a whole is reported on the base field with the combination it came from."""
    with pytest.raises(SpecError) as err:
        expand(SweepSpec(grid={"partition.alpha": [0.1, -1]}))
    assert [f for f, _ in err.value.errors] == ["grid.partition.alpha[1]"]
    with pytest.raises(SpecError) as err:
        expand(
            SweepSpec(
                base={"partition": {"num_users": 4}},
                grid={"seed": [1], "users_per_round,local_steps": [[2, 1], [5, 2]]},
            )
        )
    assert err.value.errors == [
        (
            "grid.users_per_round,local_steps[1][0]",
            "users_per_round=5 exceeds partition.num_users=4",
        ),
        (
            "base.partition.num_users",
            "users_per_round=5 exceeds partition.num_users=4 "
            "(with grid.seed[0]=1, grid.users_per_round,local_steps[1]=[5, 2])",
        ),
    ]
