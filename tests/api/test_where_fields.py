"""`?where=` on a field the spec does not have, or with a value the field's type cannot hold, is
a 422 naming the field and the nearest known ones, not an empty page (SQLite and Postgres); the
known fields come from the spec's schema, every algorithm's included."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from fastapi.testclient import TestClient
from pydantic import Field
from sqlalchemy.orm import Session

from fedgen.algorithms import registry
from fedgen.algorithms.params import AlgorithmParams
from lab.models import User
from lab.repository.spec_fields import known_fields, nearest, where_problem
from tests.support.factories import create_run
from tests.support.toy_algorithms import fedavg_under

API = "/api/v1"


def _get(client: TestClient, token: str, *where: str) -> Any:
    return client.get(
        f"{API}/runs", params={"where": list(where)}, headers={"Authorization": f"Bearer {token}"}
    )


def _messages(r: Any) -> list[str]:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert {d["field"] for d in detail} == {"where"}
    return [d["msg"] for d in detail]


def test_unknown_and_mistyped_fields_are_422_naming_field_and_nearest(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """The issue's four filters each get a message; partition.alpha=0.1 still filters."""
    # Prepare
    alice = session.query(User).filter_by(name="alice").one()
    create_run(session, alice, partition={"alpha": 0.1})
    create_run(session, alice, partition={"alpha": 1.0})
    token = tokens["bob"]
    # Execute
    alpha = _messages(_get(client, token, "alpha=0.1"))
    algorithm = _messages(_get(client, token, "algorithm=fedgen"))
    nonexistent = _messages(_get(client, token, "nonexistent.field=3"))
    abc = _messages(_get(client, token, "partition.alpha=abc"))
    good = _get(client, token, "partition.alpha=0.1")
    # Assert
    assert "alpha is not a spec field; did you mean partition.alpha" in alpha[0]
    assert "algorithm is an object; did you mean algorithm.name?" in algorithm[0]
    assert "nonexistent.field is not a spec field" in nonexistent[0]
    assert "partition.alpha is a number; 'abc' cannot match" in abc[0]
    assert good.status_code == 200, good.text
    assert good.json()["count"] == 1
    assert good.json()["data"][0]["spec"]["partition"]["alpha"] == 0.1


def test_every_bad_clause_is_named_and_good_ones_pass(
    client: TestClient, tokens: dict[str, str]
) -> None:
    """Two bad clauses among good ones: one message each; a syntax error is still said."""
    # Execute
    r = _get(
        client,
        tokens["alice"],
        "algorithm.name=fedgen",
        "partiton.alpha=1",
        "algorithm.gen_batch_size=true",
        "seed=1",
        "lr",
    )
    # Assert
    msgs = _messages(r)
    assert len(msgs) == 3
    assert any("did you mean partition.alpha" in m for m in msgs)
    assert any("algorithm.gen_batch_size is an integer; true cannot match" in m for m in msgs)
    assert any("expected field=value" in m for m in msgs)


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        (("algorithm", "name"), "fedgenn", 'algorithm.name is one of "fedavg"'),
        (("algorithm", "gen_batch_size"), 32.5, "algorithm.gen_batch_size is an integer; 32.5"),
        (("algorithm", "gen_batch_size"), "32", "is an integer; '32' cannot match"),
        (("partition", "min_samples"), "x", "partition.min_samples is an integer or null"),
        (("partition", "alpha"), None, "partition.alpha is a number; null cannot match"),
        (("tags",), "x", "tags is a list; 'x' cannot match"),
        (("data",), "mnist", "data is an object; did you mean data.name?"),
    ],
)
def test_a_value_the_type_cannot_hold_is_said(path: tuple[str, ...], value: Any, said: str) -> None:
    """Enumerations, integers, nullable fields, lists and sections each in words."""
    problem = where_problem(path, value)
    assert problem is not None
    assert said in problem


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("partition", "alpha"), 1),  # an integer matches a float field (stored 1.0)
        (("algorithm", "gen_batch_size"), 32.0),  # matches 32
        (("algorithm", "mu"), 0.1),  # FedProx's: known though the default algorithm lacks it
        (("algorithm", "noise"), None),  # a FedGen knob, nullable
        (("data", "root"), None),
        (("data", "folder"), None),
        (("note",), ""),
        (("algorithm", "name"), "fedgen"),
    ],
)
def test_a_value_that_can_match_is_no_problem(path: tuple[str, ...], value: Any) -> None:
    assert where_problem(path, value) is None


def test_known_fields_cover_every_algorithm_and_nearest_uses_last_names() -> None:
    """Each algorithm's own fields are known; `alpha` is near partition.alpha by its last name,
    a misspelt section by the whole path."""
    fields = known_fields()
    for f in ("algorithm.gen_batch_size", "algorithm.distill_lr", "algorithm.reg_alpha"):
        assert f in fields
    assert nearest("alpha", fields)[0] == "partition.alpha"
    assert nearest("partiton.alpha", fields)[0] == "partition.alpha"
    assert nearest("nonexistent.field", fields) == []


class KnobParams(AlgorithmParams):
    """A test-only algorithm with a parameter no built-in has."""

    name: Literal["knobby"] = "knobby"
    knob_strength: float = Field(1.0, ge=0.0, le=10.0)


@pytest.mark.usefixtures("algorithms_restored")
def test_a_plugin_registered_later_makes_its_fields_known() -> None:
    """The known fields follow the registry (cached per registered set, not once for ever)."""
    # Prepare
    before = where_problem(("algorithm", "knob_strength"), 2.0)
    decl = fedavg_under("knobby", KnobParams)
    # Execute
    registry.register_algorithm(decl)
    after = where_problem(("algorithm", "knob_strength"), 2.0)
    named = where_problem(("algorithm", "name"), "knobby")
    # Assert
    assert before is not None
    assert "algorithm.knob_strength is not a spec field" in before
    assert after is None
    assert named is None
