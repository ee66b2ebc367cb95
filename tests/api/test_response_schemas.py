"""Every JSON response has a schema: /difference, /studies/{name}, /studies/{name}/results,
/sweeps/{id}/summary (and its CSV alternative) and /spec/schema name a model in the OpenAPI
document, and the bodies they send have exactly that model's fields."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from lab.models import Run, User
from tests.support.factories import create_run, create_sweep_runs, make_spec, seed_rounds

API = "/api/v1"


@pytest.fixture
def openapi(client: TestClient) -> dict[str, Any]:
    """The OpenAPI document the app serves."""
    return client.get(f"{API}/openapi.json").json()


def _component(doc: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    return doc["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]


def _ok_schema(doc: dict[str, Any], path: str, media: str = "application/json") -> dict[str, Any]:
    """The component schema of the 200 response of GET `path`."""
    content = doc["paths"][f"{API}{path}"]["get"]["responses"]["200"]["content"]
    return _component(doc, content[media]["schema"])


def _item(doc: dict[str, Any], schema: dict[str, Any], field: str) -> dict[str, Any]:
    """The component of the items of the array property `field`."""
    return _component(doc, schema["properties"][field]["items"])


def _keys_match(body: dict[str, Any], schema: dict[str, Any]) -> None:
    assert set(body) == set(schema["properties"]) == set(schema["required"])


@pytest.mark.parametrize(
    ("path", "model", "fields"),
    [
        ("/difference", "Difference", {"diff", "ci", "p_value", "df", "mean_a", "n_b", "swapped"}),
        ("/studies/{name}", "StudyDefinition", {"sweep", "paper", "launched", "rows", "runs"}),
        ("/studies/{name}/results", "StudyResults", {"cells", "runs_done", "sweep_id", "unit"}),
        ("/sweeps/{sweep_id}/summary", "SweepSummary", {"sweep_id", "group_by", "groups"}),
        ("/spec/schema", "SpecJsonSchema", {"$defs", "properties", "title", "type"}),
    ],
)
def test_openapi_gives_each_response_a_model(
    openapi: dict[str, Any], path: str, model: str, fields: set[str]
) -> None:
    """The 200 response references a named model that lists the response's fields."""
    content = openapi["paths"][f"{API}{path}"]["get"]["responses"]["200"]["content"]
    assert content["application/json"]["schema"] == {"$ref": f"#/components/schemas/{model}"}
    assert fields <= set(_ok_schema(openapi, path)["properties"])


def test_nested_rows_are_described_too(openapi: dict[str, Any]) -> None:
    """Summary groups, study cells (plain and ratio), paper cells and launched sweeps."""
    summary = _ok_schema(openapi, "/sweeps/{sweep_id}/summary")
    group = _item(openapi, summary, "groups")
    assert {"final_mean", "best_round", "top5_std", "excluded", "all_run_ids"} <= set(
        group["properties"]
    )
    results = _ok_schema(openapi, "/studies/{name}/results")
    cells = [_component(openapi, s) for s in results["properties"]["cells"]["items"]["anyOf"]]
    assert [c["title"] for c in cells] == ["StudyRatioCell", "StudyCell"]
    assert {"ratio", "paper_ratio", "verdict"} <= set(cells[0]["properties"])
    assert "ratio" not in cells[1]["properties"]
    definition = _ok_schema(openapi, "/studies/{name}")
    assert set(_item(openapi, definition, "paper")["properties"]) == {
        "row",
        "column",
        "mean",
        "std",
    }
    assert "status_counts" in _item(openapi, definition, "launched")["properties"]
    spec = _ok_schema(openapi, "/spec/schema")
    assert spec["additionalProperties"] is True  # a JSON Schema document: other keywords pass


def test_csv_stays_documented_beside_the_json(openapi: dict[str, Any]) -> None:
    """The JSON-or-CSV routes: the model for JSON, a string for text/csv."""
    for path in ("/sweeps/{sweep_id}/summary", "/sweeps/{sweep_id}/plot-data"):
        content = openapi["paths"][f"{API}{path}"]["get"]["responses"]["200"]["content"]
        assert content["text/csv"] == {"schema": {"type": "string"}}
        assert "$ref" in content["application/json"]["schema"]


def _curve(final: float) -> list[float]:
    return [0.1, 0.2, 0.3, final, final]


def test_bodies_have_exactly_the_models_fields(
    client: TestClient, auth: dict, session: Session, openapi: dict[str, Any]
) -> None:
    """What the endpoints send: every field of the model, nothing else, nulls where none."""
    # Prepare
    alice = session.query(User).filter_by(name="alice").one()
    a = [create_run(session, alice, algorithm="fedgen", rounds=4, seed=i) for i in range(2)]
    b = [create_run(session, alice, algorithm="fedavg", rounds=4, seed=i) for i in range(2)]
    for i, run in enumerate(a + b):
        seed_rounds(session, run, _curve(0.5 + i / 10))
    ids = [",".join(str(r.id) for r in side) for side in (a, b)]
    sweep_id, runs = create_sweep_runs(
        session, alice, {"seed": [0, 1, 2]}, base=make_spec(rounds=3)
    )
    seed_rounds(session, runs[0], [0.1, 0.2, 0.3, 0.4])
    study = client.post(
        f"{API}/studies/table3",
        json={"dataset": "synthetic", "seeds": 1, "rounds": 3},
        headers=auth,
    ).json()["sweep"]
    for run in session.query(Run).filter(Run.sweep_id == uuid.UUID(study["id"])).all():
        seed_rounds(session, run, [0.5] * 4, extra=lambda r: {"time_user_ms": 40.0 + r})
    # Execute
    diff = client.get(f"{API}/difference?a={ids[0]}&b={ids[1]}", headers=auth).json()
    summary = client.get(f"{API}/sweeps/{sweep_id}/summary", headers=auth).json()
    definition = client.get(f"{API}/studies/table3", headers=auth).json()
    results = client.get(f"{API}/studies/table3/results", headers=auth).json()
    spec = client.get(f"{API}/spec/schema", headers=auth).json()
    # Assert
    _keys_match(diff, _ok_schema(openapi, "/difference"))
    summary_schema = _ok_schema(openapi, "/sweeps/{sweep_id}/summary")
    _keys_match(summary, summary_schema)
    (group,) = summary["groups"]
    _keys_match(group, _item(openapi, summary_schema, "groups"))
    assert (group["n"], group["n_total"], group["best_round"]) == (1, 3, 2)
    definition_schema = _ok_schema(openapi, "/studies/{name}")
    _keys_match(definition, definition_schema)
    (launched,) = definition["launched"]
    _keys_match(launched, _item(openapi, definition_schema, "launched"))
    results_schema = _ok_schema(openapi, "/studies/{name}/results")
    _keys_match(results, results_schema)
    ratio, plain = (
        _component(openapi, s) for s in results_schema["properties"]["cells"]["items"]["anyOf"]
    )
    for cell in results["cells"]:
        # Table 3's cells carry ratios to FedAvg; a plain cell has no ratio keys at all.
        _keys_match(cell, ratio if "ratio" in cell else plain)
    assert any("ratio" in c for c in results["cells"])
    assert set(_ok_schema(openapi, "/spec/schema")["required"]) <= set(spec)
    assert "$defs" in spec
    assert spec["additionalProperties"] is False


def _typed(doc: dict[str, Any], media: str, schema: dict[str, Any]) -> bool:
    """A model (a $ref to a component with properties), an object with its properties listed,
    or, for a non-JSON body (CSV, a download), a string."""
    if "$ref" in schema:
        return bool(_component(doc, schema).get("properties"))
    if media == "application/json" or "properties" in schema:
        return bool(schema.get("properties"))
    return schema.get("type") == "string"


def test_every_success_response_of_every_route_has_a_schema(openapi: dict[str, Any]) -> None:
    """No route answers an untyped body: each 2xx response (204 aside) names its fields."""
    untyped = [
        (method, path, code, media)
        for path, ops in openapi["paths"].items()
        for method, op in ops.items()
        for code, resp in op["responses"].items()
        if code.startswith("2") and code != "204"
        for media, body in (resp.get("content") or {"(none)": {}}).items()
        if not _typed(openapi, media, body.get("schema", {}))
    ]
    assert untyped == []
