"""Notes and tags after submission (PATCH /runs/{id}, /sweeps/{id}) and the list filters that
find runs by them (`q`) and by any spec field (`where`), on SQLite and Postgres."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from lab.models import User
from tests.support.factories import create_run, make_spec

API = "/api/v1"


def _h(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _submit(client: TestClient, token: str, **overrides: Any) -> dict[str, Any]:
    r = client.post(f"{API}/runs", json={"spec": make_spec(**overrides)}, headers=_h(token))
    assert r.status_code == 202, r.text
    return r.json()  # type: ignore[no-any-return]


def _fields(r: Any) -> set[str]:
    return {d["field"] for d in r.json()["detail"]}


def test_owner_edits_a_runs_note_and_tags_and_who_and_when_are_kept(
    client: TestClient, tokens: dict[str, str]
) -> None:
    """The submitted note and tags show on the run; the owner replaces them, the time is the
    database's, the spec keeps what was submitted; a tag list alone leaves the note."""
    # Prepare
    run = _submit(client, tokens["alice"], note="first try", tags=["a", "b"])
    assert (run["note"], run["tags"], run["annotated_by"]) == ("first try", ["a", "b"], None)
    # Execute
    r = client.patch(
        f"{API}/runs/{run['id']}",
        json={"note": "lr too high", "tags": ["table2", "bad-lr", "table2"]},
        headers=_h(tokens["alice"]),
    )
    again = client.get(f"{API}/runs/{run['id']}", headers=_h(tokens["bob"])).json()
    tags_only = client.patch(
        f"{API}/runs/{run['id']}", json={"tags": []}, headers=_h(tokens["alice"])
    ).json()
    # Assert
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["note"] == "lr too high"
    assert body["tags"] == ["table2", "bad-lr"]  # each tag once
    assert body["annotated_by"] == "alice"
    assert body["annotated_at"] >= run["created_at"]
    assert body["spec"]["note"] == "first try"  # the spec is what was submitted
    assert (again["note"], again["tags"]) == ("lr too high", ["table2", "bad-lr"])
    assert (tags_only["tags"], tags_only["note"]) == ([], "lr too high")


def test_another_user_gets_403_and_an_admin_may(client: TestClient, tokens: dict[str, str]) -> None:
    """A PATCH by another user is 403 and changes nothing; an admin's is recorded as the admin's."""
    # Prepare
    run = _submit(client, tokens["alice"], note="mine")
    # Execute
    bob = client.patch(f"{API}/runs/{run['id']}", json={"note": "x"}, headers=_h(tokens["bob"]))
    admin = client.patch(
        f"{API}/runs/{run['id']}", json={"note": "checked"}, headers=_h(tokens["admin"])
    )
    # Assert
    assert bob.status_code == 403
    assert admin.status_code == 200
    assert (admin.json()["note"], admin.json()["annotated_by"]) == ("checked", "admin")
    missing = "00000000-0000-0000-0000-000000000000"
    gone = client.patch(f"{API}/runs/{missing}", json={"note": "x"}, headers=_h(tokens["alice"]))
    assert gone.status_code == 404


def test_bad_annotations_are_422_naming_the_field(
    client: TestClient, tokens: dict[str, str]
) -> None:
    """Too long a note, too many or empty tags, an unknown field: 422 naming it; {} is a no-op."""
    # Prepare
    run = _submit(client, tokens["alice"])
    url, h = f"{API}/runs/{run['id']}", _h(tokens["alice"])
    # Execute
    long_note = client.patch(url, json={"note": "x" * 10_001}, headers=h)
    many = client.patch(url, json={"tags": [f"t{i}" for i in range(33)]}, headers=h)
    empty_tag = client.patch(url, json={"tags": [""]}, headers=h)
    unknown = client.patch(url, json={"notes": "x"}, headers=h)
    nothing = client.patch(url, json={}, headers=h)
    # Assert
    assert long_note.status_code == 422
    assert _fields(long_note) == {"note"}
    assert "10000" in long_note.text
    assert many.status_code == 422
    assert _fields(many) == {"tags"}
    assert "32" in many.text
    assert empty_tag.status_code == 422
    assert _fields(empty_tag) == {"tags.0"}
    assert unknown.status_code == 422
    assert _fields(unknown) == {"notes"}
    assert nothing.status_code == 200  # an empty patch changes nothing
    assert client.get(url, headers=h).json()["annotated_by"] is None


def test_a_clone_keeps_the_tags_not_the_note(client: TestClient, tokens: dict[str, str]) -> None:
    """A clone starts with the run's tags as edited and an empty note (unless it gives one)."""
    # Prepare
    run = _submit(client, tokens["alice"], note="about the original", tags=["old"])
    client.patch(f"{API}/runs/{run['id']}", json={"tags": ["kept"]}, headers=_h(tokens["alice"]))
    # Execute
    plain = client.post(
        f"{API}/runs/{run['id']}/clone", json={"changes": {"seed": 1}}, headers=_h(tokens["bob"])
    ).json()
    noted = client.post(
        f"{API}/runs/{run['id']}/clone",
        json={"changes": {"seed": 2, "note": "seed 2"}},
        headers=_h(tokens["bob"]),
    ).json()
    # Assert
    assert (plain["note"], plain["spec"]["note"], plain["tags"]) == ("", "", ["kept"])
    assert noted["note"] == "seed 2"


def test_sweep_annotations_owner_admin_403_and_search(
    client: TestClient, tokens: dict[str, str]
) -> None:
    """PATCH /sweeps/{id}: the owner and an admin may, others get 403; `q` finds it by note."""
    # Prepare
    sweep = client.post(
        f"{API}/sweeps",
        json={"name": "lr grid", "base": make_spec(), "grid": {"seed": [0, 1]}},
        headers=_h(tokens["alice"]),
    ).json()
    url = f"{API}/sweeps/{sweep['id']}"
    # Execute
    own = client.patch(
        url, json={"note": "Table 2 redo", "tags": ["t2"]}, headers=_h(tokens["alice"])
    )
    bob = client.patch(url, json={"note": "x"}, headers=_h(tokens["bob"]))
    admin = client.patch(url, json={"tags": ["t2", "ok"]}, headers=_h(tokens["admin"]))
    found = client.get(f"{API}/sweeps", params={"q": "TABLE 2"}, headers=_h(tokens["bob"]))
    none = client.get(f"{API}/sweeps", params={"q": "nothing"}, headers=_h(tokens["bob"]))
    # Assert
    assert own.status_code == 200, own.text
    assert (own.json()["note"], own.json()["tags"], own.json()["annotated_by"]) == (
        "Table 2 redo",
        ["t2"],
        "alice",
    )
    assert own.json()["annotated_at"] is not None
    assert bob.status_code == 403
    assert admin.json()["annotated_by"] == "admin"
    assert admin.json()["note"] == "Table 2 redo"
    assert [s["id"] for s in found.json()["data"]] == [sweep["id"]]
    assert none.json() == {"data": [], "count": 0}


def test_q_searches_notes_and_tags_ignoring_case(
    client: TestClient, tokens: dict[str, str]
) -> None:
    """`q` matches the edited note or a tag, in any case; LIKE wildcards are literal."""
    # Prepare
    a = _submit(client, tokens["alice"], note="Diverged at round 3")
    b = _submit(client, tokens["alice"], tags=["Baseline"])
    _submit(client, tokens["alice"], note="100% fine")
    client.patch(
        f"{API}/runs/{b['id']}", json={"note": "see DIVERGED too"}, headers=_h(tokens["alice"])
    )

    def ids(q: str) -> set[str]:
        page = client.get(f"{API}/runs", params={"q": q}, headers=_h(tokens["bob"])).json()
        return {r["id"] for r in page["data"]}

    # Execute / Assert
    assert ids("diverged") == {a["id"], b["id"]}
    assert ids("baseline") == {b["id"]}
    assert ids("%") == ids("100%")
    assert len(ids("%")) == 1
    assert ids("_") == set()


def test_where_filters_spec_fields_in_sql_with_the_count(
    client: TestClient, tokens: dict[str, str], session: Session
) -> None:
    """`where` on numbers (32 = 32.0), floats, strings and booleans, clauses combined; the count
    and the pages follow the filter; a number never matches a string field."""
    # Prepare
    alice = session.query(User).filter_by(name="alice").one()
    for gbs in (32, 32, 32, 64):
        create_run(session, alice, algorithm={"name": "fedgen", "gen_batch_size": gbs})
    create_run(session, alice, partition={"alpha": 1.0})
    create_run(session, alice, lr=0.05)

    def page(*where: str, **params: Any) -> dict[str, Any]:
        r = client.get(
            f"{API}/runs", params={"where": list(where), **params}, headers=_h(tokens["bob"])
        )
        assert r.status_code == 200, r.text
        return r.json()  # type: ignore[no-any-return]

    # Execute
    by_int = page("algorithm.gen_batch_size=32")
    by_float = page("algorithm.gen_batch_size=32.0", limit=2)
    second = page("algorithm.gen_batch_size=32.0", limit=2, offset=2)
    # Assert
    assert by_int["count"] == 3
    assert len(by_int["data"]) == 3
    assert by_float["count"] == 3
    assert len(by_float["data"]) == 2
    assert len(second["data"]) == 1
    assert {r["id"] for r in by_float["data"] + second["data"]} == {r["id"] for r in by_int["data"]}
    assert page("algorithm.gen_batch_size=64")["count"] == 1
    assert page("partition.alpha=1")["count"] == 1  # stored 1.0
    assert page("lr=0.05")["count"] == 1
    assert page("algorithm.name=fedgen")["count"] == 4
    assert page("algorithm.name=fedgen", "algorithm.gen_batch_size=64")["count"] == 1
    assert page("data.download=false")["count"] == 6
    assert page("data.root=null")["count"] == 6
    # A number for a string field, a string for a number, an unknown field: 422, not 0 runs
    # (tests/api/test_where_fields.py says what each answer names).
    for clause in ("algorithm.name=0", 'algorithm.gen_batch_size="32"', "no.such.field=1"):
        r = client.get(f"{API}/runs", params={"where": clause}, headers=_h(tokens["bob"]))
        assert r.status_code == 422, clause


def test_malformed_where_is_422_naming_where(client: TestClient, tokens: dict[str, str]) -> None:
    """No `=`, a field that is not a dotted name, a list value, too many or too long: 422."""
    h = _h(tokens["alice"])

    def bad(*where: str) -> Any:
        return client.get(f"{API}/runs", params={"where": list(where)}, headers=h)

    for r in (bad("alpha"), bad("=1"), bad("a..b=1"), bad("1x=2"), bad("tags=[1]")):
        assert r.status_code == 422, r.text
        assert {f.split(".")[0] for f in _fields(r)} == {"where"}
    too_many = bad(*[f"seed={i}" for i in range(9)])
    too_long = bad("note=" + "x" * 400)
    assert too_many.status_code == 422
    assert "8" in too_many.text
    assert too_long.status_code == 422
    assert "300" in too_long.text
    assert {f.split(".")[0] for f in _fields(too_many) | _fields(too_long)} == {"where"}
