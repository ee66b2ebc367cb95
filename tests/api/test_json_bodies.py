"""JSON bodies the parser cannot take, and non-finite numbers: 422s that name the problem.

Invalid UTF-8 and deep nesting were FastAPI's plain 400 "There was an error parsing the
body" (or a RecursionError further on); NaN and ±Infinity read as "less than or equal to 10
(got nan)". Each is now a 422 in the error body every other 422 has.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api.errors import MAX_JSON_DEPTH, json_body_problems
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from lab.models import Run, Sweep

API = "/api/v1"
JSON = {"Content-Type": "application/json"}


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _only_error(resp: Any) -> dict[str, Any]:
    assert resp.status_code == 422, resp.text
    (err,) = resp.json()["detail"]
    assert set(err) == {"loc", "msg", "type", "field"}
    return err  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", ["/runs", "/sweeps", "/spec/validate"])
def test_invalid_utf8_is_422_naming_the_byte(
    client: TestClient, auth: dict[str, str], session: Session, path: str
) -> None:
    """A body that is not UTF-8 is a 422 that says so and where, not a plain 400."""
    # Prepare
    body = b'{"spec": {"note": "caf\xe9"}}'  # Latin-1, not UTF-8: byte 22 is 0xe9
    # Execute
    resp = client.post(f"{API}{path}", content=body, headers={**auth, **JSON})
    # Assert
    err = _only_error(resp)
    assert err["field"] == "(body)"
    assert err["type"] == "json_invalid"
    assert err["loc"] == ["body", "22"]
    assert "invalid UTF-8 at byte 22" in err["msg"]
    assert session.scalar(select(func.count()).select_from(Run)) == 0


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 500, 100_000])
def test_deep_nesting_is_422_naming_the_limit(
    client: TestClient, auth: dict[str, str], session: Session, depth: int
) -> None:
    """Nesting over the limit is a 422 naming it, whether or not Python's parser copes (it
    gives up near 1,000 levels; 500 parsed, then overflowed the stack in the spec's checks)."""
    # Prepare
    runs = '{"spec": {"tags": ' + _nested(depth - 2) + "}}"
    sweep = '{"base": {}, "grid": {"note": ' + _nested(depth - 2) + "}}"
    # Execute
    r_run = client.post(f"{API}/runs", content=runs.encode(), headers={**auth, **JSON})
    r_sweep = client.post(f"{API}/sweeps", content=sweep.encode(), headers={**auth, **JSON})
    # Assert
    for resp in (r_run, r_sweep):
        err = _only_error(resp)
        assert err["field"] == "(body)"
        assert f"JSON nested deeper than {MAX_JSON_DEPTH} levels" in err["msg"]
    assert session.scalar(select(func.count()).select_from(Run)) == 0
    assert session.scalar(select(func.count()).select_from(Sweep)) == 0


def test_nesting_within_the_limit_reaches_field_validation(
    client: TestClient, auth: dict[str, str]
) -> None:
    """At the limit the body is parsed as before: the error names the field, not the depth."""
    # Prepare
    body = '{"spec": {"tags": ' + _nested(MAX_JSON_DEPTH - 2) + "}}"
    # Execute
    resp = client.post(f"{API}/runs", content=body.encode(), headers={**auth, **JSON})
    # Assert
    err = _only_error(resp)
    assert err["field"] == "spec.tags.0"


def test_body_checks_leave_other_answers_alone(client: TestClient, auth: dict[str, str]) -> None:
    """Only operations that take a body check it: a body-less route, a 405 and a 404 answer
    as before; a well-formed sweep with many brackets is accepted."""
    # Prepare
    bad = b"\xff" + _nested(100).encode()
    sweep = {"base": {"rounds": 2}, "grid": {"tags": [[f"t{i}"] for i in range(40)]}}
    # Execute
    cancel = client.post(
        f"{API}/runs/00000000-0000-0000-0000-000000000000/cancel",
        content=bad,
        headers={**auth, **JSON},
    )
    put = client.put(f"{API}/runs", content=bad, headers={**auth, **JSON})
    missing = client.post(f"{API}/nowhere", content=bad, headers={**auth, **JSON})
    ok = client.post(f"{API}/sweeps", json=sweep, headers=auth)
    # Assert
    assert cancel.status_code == 404
    assert put.status_code == 405
    assert missing.status_code == 404
    assert ok.status_code == 202, ok.text
    assert ok.json()["count"] == 40


def test_json_body_problems_reads_as_json_does() -> None:
    """A bracket inside a string is text; UTF-16, which json.loads would read, is refused."""
    # Prepare
    utf16 = '{"spec": {}}'.encode("utf-16")
    in_string = ('{"note": "' + "[" * 100 + '"}').encode()
    # Execute / Assert
    assert json_body_problems(in_string) == []
    assert json_body_problems(b"{not json") == []  # left to FastAPI's own 422
    assert json_body_problems(_nested(MAX_JSON_DEPTH).encode()) == []
    assert json_body_problems(_nested(MAX_JSON_DEPTH + 1).encode()) != []
    assert "UTF-16" in json_body_problems(utf16)[0]["msg"]


@pytest.mark.parametrize(
    ("literal", "shown"), [("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity")]
)
def test_non_finite_numbers_say_so(
    client: TestClient, auth: dict[str, str], literal: str, shown: str
) -> None:
    """NaN and ±Infinity are refused as such, not as "less than or equal to 10 (got nan)"."""
    # Prepare
    run = '{"spec": {"lr": ' + literal + "}}"
    sweep = '{"grid": {"partition.alpha": [0.1, ' + literal + "]}}"
    # Execute
    r_run = client.post(f"{API}/runs", content=run.encode(), headers={**auth, **JSON})
    r_sweep = client.post(f"{API}/sweeps", content=sweep.encode(), headers={**auth, **JSON})
    # Assert
    err = _only_error(r_run)
    assert err["field"] == "spec.lr"
    assert err["msg"] == f"spec.lr: {shown} is not allowed (a finite number is required)"
    err = _only_error(r_sweep)
    assert err["field"] == "grid.partition.alpha[1]"
    assert f"{shown} is not allowed (a finite number is required)" in err["msg"]


def _float_fields() -> list[tuple[dict[str, Any], str]]:
    """(spec setting one float field to NaN, the field's dotted error location) for every
    float field of every section and algorithm of the spec, fidelity knobs included."""
    schema = ExperimentSpec.model_json_schema(mode="validation")
    defs = schema["$defs"]

    def numbers(props: dict[str, Any]) -> list[str]:
        def is_number(s: dict[str, Any]) -> bool:
            return s.get("type") == "number" or any(is_number(a) for a in s.get("anyOf", []))

        return [name for name, s in props.items() if is_number(s)]

    out: list[tuple[dict[str, Any], str]] = []
    for name in numbers(schema["properties"]):
        out.append(({name: math.nan}, name))
    for section, prop in schema["properties"].items():
        if section == "algorithm":
            for ref in prop["discriminator"]["mapping"].values():
                variant = defs[ref.rsplit("/", 1)[1]]
                algo = variant["properties"]["name"]["const"]
                for f in numbers(variant["properties"]):
                    out.append(
                        ({"algorithm": {"name": algo, f: math.nan}}, f"algorithm.{algo}.{f}")
                    )
        elif "$ref" in prop:
            for f in numbers(defs[prop["$ref"].rsplit("/", 1)[1]]["properties"]):
                out.append(({section: {f: math.nan}}, f"{section}.{f}"))
    return out


def test_every_float_field_of_the_spec_refuses_nan() -> None:
    """One rule for all: each float field's NaN gets the same message, naming that field."""
    # Prepare
    cases = _float_fields()
    # Execute
    errors = []
    for data, _loc in cases:
        with pytest.raises(SpecError) as exc:
            parse_spec(data, strict=True)
        errors.append(exc.value.errors)
    # Assert
    locs = {loc for _data, loc in cases}
    assert {
        "lr",
        "partition.alpha",
        "algorithm.fedprox.mu",
        "algorithm.fedgen.generator_lr",
    } <= locs
    for (_data, loc), errs in zip(cases, errors, strict=True):
        assert errs == [(loc, "NaN is not allowed (a finite number is required)")]
