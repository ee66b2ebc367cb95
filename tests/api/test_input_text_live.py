"""Strings and numbers a database or a parser cannot take, tried from outside on the real
`fedgen-lab api` process (PostgreSQL): every string field of every request body and every
string query parameter the OpenAPI document declares, with a NUL and with a lone surrogate, is
a 422 naming that field (never a 500); a `where` value's JSON escapes too; a 5,000-digit
integer is a 422 naming its field; a UTF-16 body is refused naming the encoding; a query
parameter's 422 says `query`; a sweep summary CSV splits off no formula in a `;` locale.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.api_process import ApiProcess, api_process
from tests.support.factories import make_spec

pytestmark = pytest.mark.postgres
NUL, SURROGATE = "a\x00b", "a\ud800b"
JSON = {"Content-Type": "application/json"}
DATA_NAMES = ("plain", "x;=1+1")  # two data roots: one name splits into a formula at ';'


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiProcess]:
    """`fedgen-lab api` whose data roots are two folders, one named `x;=1+1`."""
    home = tmp_path_factory.mktemp("text")
    roots = [home / "data" / name for name in DATA_NAMES]
    for root in roots:
        root.mkdir(parents=True)
    with api_process(home, FEDGEN_DATA_ROOTS=",".join(str(r) for r in roots)) as a:
        yield a


@pytest.fixture(scope="module")
def schema(api: ApiProcess) -> dict[str, Any]:
    """The live API's OpenAPI document."""
    return httpx.get(f"{api.url}/openapi.json", timeout=30).json()  # type: ignore[no-any-return]


def _resolve(node: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = doc
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _string_paths(
    node: Any, doc: dict[str, Any], path: tuple[str | int, ...] = (), depth: int = 0
) -> Iterator[tuple[str | int, ...]]:
    """Every place a string may go in a body of this schema (an array's first item, a map's
    key `k`)."""
    if not isinstance(node, dict) or depth > 8:
        return  # `true`/`false` schemas, or deep enough
    node = _resolve(node, doc)
    if node.get("type") == "string" or "const" in node and isinstance(node["const"], str):
        yield path
    for branch in node.get("anyOf", []) + node.get("oneOf", []) + node.get("allOf", []):
        yield from _string_paths(branch, doc, path, depth + 1)
    for name, child in node.get("properties", {}).items():
        yield from _string_paths(child, doc, (*path, name), depth + 1)
    if isinstance(node.get("items"), dict):
        yield from _string_paths(node["items"], doc, (*path, 0), depth + 1)
    if isinstance(node.get("additionalProperties"), dict):
        yield from _string_paths(node["additionalProperties"], doc, (*path, "k"), depth + 1)


def _body_at(path: tuple[str | int, ...], value: str) -> Any:
    body: Any = value
    for part in reversed(path):
        body = [body] if isinstance(part, int) else {part: body}
    return body


def _body_fields(doc: dict[str, Any]) -> list[tuple[str, str, tuple[str | int, ...]]]:
    """(method, path, field path) of every string field of every JSON request body."""
    out = []
    for url, ops in doc["paths"].items():
        for method, op in ops.items():
            content = op.get("requestBody", {}).get("content", {}).get("application/json")
            if content is None:
                continue
            for field in dict.fromkeys(_string_paths(content["schema"], doc)):
                if field:  # a body that is a bare string has no field to name
                    out.append((method.upper(), url, field))
    return out


def _query_fields(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(method, path, name) of every query parameter that takes a string."""
    out = []
    for url, ops in doc["paths"].items():
        for method, op in ops.items():
            for param in op.get("parameters", []):
                if param["in"] == "query" and list(_string_paths(param["schema"], doc)):
                    out.append((method.upper(), url, param["name"]))
    return out


def _url(path: str) -> str:
    """A path template with every `{param}` filled with a made-up id."""
    parts = path.removeprefix("/api/v1").split("/")
    return "/".join(str(uuid.uuid4()) if p.startswith("{") else p for p in parts)


def test_every_string_field_of_every_body_refuses_nul_and_surrogates(
    api: ApiProcess, schema: dict[str, Any]
) -> None:
    """Each string field of each body, alone with a NUL or a lone surrogate: a 422 whose
    detail names that field (and says which character), JSON, never a 500."""
    # Prepare
    fields = _body_fields(schema)
    wrong = []
    with api.client() as c:
        for method, url, field in fields:
            for text, what in ((NUL, "NUL"), (SURROGATE, "lone surrogate")):
                # Execute (json.dumps writes both as \u escapes, as any JSON client would)
                body = json.dumps(_body_at(field, text))
                r = c.request(
                    method, _url(url), content=body, headers={**api.headers("alice"), **JSON}
                )
                # Assert (collected: one report names every field that fails)
                name = ".".join(str(p) for p in field)
                detail = r.json().get("detail") if r.status_code == 422 else None
                named = [d for d in detail or [] if d["field"] == name and what in d["msg"]]
                if not named or named[0]["loc"][0] != "body":
                    wrong.append(f"{method} {url} {name} {what}: {r.status_code} {r.text[:150]}")
    assert len(fields) > 50  # the spec's fields are among them
    assert not wrong, "\n".join(wrong)


def test_every_string_query_parameter_refuses_nul(api: ApiProcess, schema: dict[str, Any]) -> None:
    """Each string query parameter with a NUL: a 422 at ["query", name]."""
    # Prepare
    params = _query_fields(schema)
    wrong = []
    with api.client() as c:
        for method, url, name in params:
            # Execute
            r = c.request(method, _url(url), params={name: NUL}, headers=api.headers("alice"))
            # Assert
            detail = r.json().get("detail") if r.status_code == 422 else None
            if [d["loc"] for d in detail or []] != [["query", name]]:
                wrong.append(f"{method} {url} ?{name}: {r.status_code} {r.text[:150]}")
    assert {"where", "tag", "owner", "group_by"} <= {p[2] for p in params}
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("escape", ["\\u0000", "\\ud800", "\\uDFFF"])
@pytest.mark.parametrize("field", ["note", "data.root", "seed", "tags"])
def test_where_values_refuse_escaped_nul_and_surrogates(
    api: ApiProcess, escape: str, field: str
) -> None:
    """A `where` value is JSON: an escaped NUL or surrogate in it is a 422 at
    ["query", "where"] (it was a 500, a text/plain one for a surrogate)."""
    # Execute
    r = httpx.get(
        f"{api.url}/runs",
        params={"where": f'{field}="x{escape}"'},
        headers=api.headers("alice"),
        timeout=30,
    )
    # Assert
    assert r.status_code == 422, r.text
    ((err),) = r.json()["detail"]
    assert err["loc"] == ["query", "where"]
    assert "NUL" in err["msg"] or "surrogate" in err["msg"]


def test_a_5000_digit_integer_is_a_422_naming_its_field(api: ApiProcess) -> None:
    """Python reads at most 4300 digits: more is a 422 naming the field and the limit."""
    body = '{"name": "long", "expires_days": ' + "7" * 5000 + "}"
    r = httpx.post(
        f"{api.url}/tokens", content=body, headers={**api.headers("alice"), **JSON}, timeout=30
    )
    assert r.status_code == 422, r.text
    ((err),) = r.json()["detail"]
    assert (err["loc"], err["field"]) == (["body", "expires_days"], "expires_days")
    assert "5000 digits" in err["msg"]
    assert "4300" in err["msg"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_a_body_not_in_utf8_is_refused_naming_its_encoding(api: ApiProcess, encoding: str) -> None:
    """JSON in UTF-16 or UTF-32 is a 422 that names the encoding; nothing is made."""
    body = json.dumps({"name": "wide"}).encode(encoding)
    with api.client() as c:
        r = c.post("/tokens", content=body, headers={**api.headers("alice"), **JSON})
        names = [t["name"] for t in c.get("/tokens", headers=api.headers("alice")).json()["data"]]
    assert r.status_code == 422, r.text
    assert encoding.upper()[:6] in r.json()["detail"][0]["msg"]
    assert "wide" not in names


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"offset": "1", "cursor": "abc"}, "offset"),
        ({"limit": "100000"}, "limit"),
        ({"where": "nosuchfield=1"}, "where"),
    ],
)
def test_query_parameter_errors_say_query(
    api: ApiProcess, query: dict[str, str], field: str
) -> None:
    """The route's own checks of a query parameter say `query` in the loc, as FastAPI's do."""
    r = httpx.get(f"{api.url}/runs", params=query, headers=api.headers("alice"), timeout=30)
    assert r.status_code == 422, r.text
    assert [d["loc"] for d in r.json()["detail"]] == [["query", field]]


def test_sweep_csv_splits_off_no_formula_in_a_semicolon_locale(api: ApiProcess) -> None:
    """A sweep over two data roots, one named `x;=1+1`: its summary CSV, read with `;` as the
    separator, has no cell that starts a formula; read with `,`, the name is still there."""
    # Prepare
    roots = [str(Path(api.log).parent / "data" / name) for name in DATA_NAMES]
    sweep = {"base": make_spec(), "grid": {"data.root": roots}}
    with api.client() as c:
        made = c.post("/sweeps", json=sweep, headers=api.headers("alice"))
        assert made.status_code == 202, made.text
        # Execute
        r = c.get(
            f"/sweeps/{made.json()['id']}/summary",
            params={"format": "csv", "group_by": "data.root"},
            headers=api.headers("alice"),
        )
    # Assert
    assert r.status_code == 200, r.text
    semicolon = [c for row in csv.reader(io.StringIO(r.text), delimiter=";") for c in row]
    comma = [c for row in csv.reader(io.StringIO(r.text)) for c in row]
    assert not [c for c in semicolon if c.lstrip(' "').startswith(("=", "+", "@"))]
    assert any(c.endswith("x;'=1+1") for c in comma), comma
