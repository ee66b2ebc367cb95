"""The sweep grid's OpenAPI schema and the API agree on `algorithm` with `algorithm.<param>`.

The contract run found a grid the schema allowed and the API refused (ST202): `algorithm:
["feddistill"]` with `algorithm.regularize_round0`, a FedGen-only parameter. The schema now
allows, with an `algorithm` key, only algorithms that have each `algorithm.<param>` given;
and a grid applies `algorithm` before its parameters in any key order (an `algorithm` key
after the parameter used to drop it silently). With 14 algorithms that rule outgrew what
Schemathesis could generate from (a "Schema Error" on POST /sweeps), so one test draws bodies.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings

from fedgen.algorithms.registry import algorithm_names
from fedgen.spec import ExperimentSpec, SpecError
from fedgen.sweep import SweepSpec, expand

API = "/api/v1"


def _validator(client: TestClient, component: str) -> jsonschema.protocols.Validator:
    doc = client.get(f"{API}/openapi.json").json()
    schema = {"$ref": f"#/components/schemas/{component}", "components": doc["components"]}
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture
def grid_validator(client: TestClient) -> jsonschema.protocols.Validator:
    """A JSON Schema validator of the served document's SweepGrid."""
    return _validator(client, "SweepGrid")


@pytest.fixture
def sweep_validator(client: TestClient) -> jsonschema.protocols.Validator:
    """A JSON Schema validator of the served document's SweepCreate (POST /sweeps' body)."""
    return _validator(client, "SweepCreate")


def _params() -> dict[str, dict[str, Any]]:
    """Every algorithm parameter -> {algorithm having it: its default value}."""
    out: dict[str, dict[str, Any]] = {}
    for name in algorithm_names():
        algo = ExperimentSpec.model_validate({"algorithm": {"name": name}}).algorithm
        for p, value in algo.model_dump(mode="json").items():
            if p != "name":
                out.setdefault(p, {})[name] = value
    return out


def _api_accepts(grid: dict[str, Any], base: dict[str, Any] | None = None) -> bool:
    try:
        expand(SweepSpec(base=base or {}, grid=grid), strict=True)
    except SpecError:
        return False
    return True


@pytest.mark.slow  # one sweep per parameter of every algorithm
def test_schema_and_api_agree_on_every_algorithm_and_parameter(
    grid_validator: jsonschema.protocols.Validator,
) -> None:
    """For each algorithm and each parameter, in both key orders, by name and by mapping: the
    schema allows the grid exactly when the API accepts it."""
    # Prepare
    grids = []
    for param, owners in _params().items():
        value = next(iter(owners.values()))
        for algo in algorithm_names():
            for entry in (algo, {"name": algo}):
                grids.append({"algorithm": [entry], f"algorithm.{param}": [value]})
                grids.append({f"algorithm.{param}": [value], "algorithm": [entry]})
    # Execute
    verdicts = [(grid_validator.is_valid(g), _api_accepts(g), g) for g in grids]
    # Assert
    disagree = [g for schema_ok, api_ok, g in verdicts if schema_ok != api_ok]
    assert disagree == []
    assert sum(ok for ok, _, _ in verdicts) > 0
    assert sum(not ok for ok, _, _ in verdicts) > 0


def test_schema_and_api_agree_on_the_bases_algorithm(
    sweep_validator: jsonschema.protocols.Validator,
) -> None:
    """Without `algorithm` in the grid, `algorithm.<param>` applies to the base's algorithm
    (FedAvg when the base names none): for each base and each parameter the schema allows
    the body exactly when the API accepts it."""
    # Prepare
    bases: list[dict[str, Any]] = [{}, {"rounds": 2}]
    bases += [{"algorithm": {"name": a}} for a in algorithm_names()]
    bodies = []
    for param, owners in _params().items():
        for base in bases:
            bodies.append(
                {"base": base, "grid": {f"algorithm.{param}": [next(iter(owners.values()))]}}
            )
    # Execute
    verdicts = [
        (sweep_validator.is_valid(b), _api_accepts(b["grid"], b["base"]), b) for b in bodies
    ]
    # Assert
    assert [b for schema_ok, api_ok, b in verdicts if schema_ok != api_ok] == []
    assert sum(ok for ok, _, _ in verdicts) > 0
    assert sweep_validator.is_valid({"base": {"algorithm": {"name": "fedgen"}}, "grid": {}})
    assert sweep_validator.is_valid({"grid": {"algorithm": ["fedprox"], "algorithm.mu": [0.1]}})
    assert sweep_validator.is_valid({})


def test_the_contract_case_is_refused_by_both(
    client: TestClient, auth: dict[str, str], grid_validator: jsonschema.protocols.Validator
) -> None:
    """ST202's grid: FedDistill with FedGen's regularize_round0 is outside the schema, and 422."""
    # Prepare
    grid = {"algorithm": ["feddistill"], "algorithm.regularize_round0": [True]}
    # Execute
    resp = client.post(f"{API}/sweeps", json={"base": {"rounds": 2}, "grid": grid}, headers=auth)
    # Assert
    assert not grid_validator.is_valid(grid)
    assert resp.status_code == 422


@pytest.mark.parametrize("first", ["algorithm", "algorithm.regularize_round0"])
def test_a_grid_the_schema_allows_is_accepted_in_any_key_order(
    client: TestClient,
    auth: dict[str, str],
    grid_validator: jsonschema.protocols.Validator,
    first: str,
) -> None:
    """FedGen and FedGen+FedGen-params: allowed, accepted, and the parameter is kept whichever
    key comes first."""
    # Prepare
    values = {
        "algorithm": ["fedgen", {"name": "fedgen", "gen_batch_size": 16}],
        "algorithm.regularize_round0": [False],
    }
    grid = {first: values[first], **{k: v for k, v in values.items() if k != first}}
    # Execute
    resp = client.post(f"{API}/sweeps", json={"base": {"rounds": 2}, "grid": grid}, headers=auth)
    # Assert
    assert grid_validator.is_valid(grid)
    assert resp.status_code == 202, resp.text
    specs = [expand(SweepSpec(grid=grid))[i].algorithm for i in range(2)]
    assert [a.regularize_round0 for a in specs] == [False, False]  # type: ignore[union-attr]
    assert [a.gen_batch_size for a in specs] == [32, 16]  # type: ignore[union-attr]


def test_a_shared_parameter_allows_each_algorithm_that_has_it(
    grid_validator: jsonschema.protocols.Validator,
) -> None:
    """reg_alpha belongs to FedDistill and FedDistill+: both together are allowed, FedAvg not."""
    # Execute / Assert
    assert grid_validator.is_valid(
        {"algorithm": ["feddistill", "feddistill-plus"], "algorithm.reg_alpha": [0.5, 2.0]}
    )
    assert not grid_validator.is_valid(
        {"algorithm": ["feddistill", "fedavg"], "algorithm.reg_alpha": [0.5]}
    )
    assert not _api_accepts({"algorithm": ["feddistill", "fedavg"], "algorithm.reg_alpha": [0.5]})


@pytest.mark.slow
def test_schemathesis_draws_sweep_bodies_the_schema_allows(
    client: TestClient, sweep_validator: jsonschema.protocols.Validator
) -> None:
    """Schemathesis generates POST /sweeps bodies from the served document (its canonical form
    gave up on the rule once inline with the grid's fields), each one SweepCreate allows, some
    with an `algorithm` key (drawn from the rule's branches that list algorithms)."""
    # Prepare
    doc = client.get(f"{API}/openapi.json").json()
    op = schemathesis.openapi.from_dict(doc)[f"{API}/sweeps"]["POST"]
    bodies: list[Any] = []

    @settings(
        max_examples=60, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(op.as_strategy())
    def draw(case: Any) -> None:
        bodies.append(case.body)

    # Execute
    draw()
    # Assert
    assert len(bodies) == 60
    assert [b for b in bodies if not sweep_validator.is_valid(b)] == []
    grids = [b["grid"] for b in bodies if isinstance(b.get("grid"), dict)]
    assert any("algorithm" in g for g in grids)
