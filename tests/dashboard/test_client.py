"""The API client: URL handling, error mapping and 422 parsing (httpx MockTransport)."""

from __future__ import annotations

import httpx
import pytest

from dashboard.client import (
    ApiAuthError,
    ApiError,
    ApiNotFound,
    ApiUnreachable,
    LabClient,
    normalize_base_url,
)
from dashboard.error_detail import error_fields


def _client(handler: object) -> LabClient:
    return LabClient("http://lab:8000", "tok", transport=httpx.MockTransport(handler))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h:8000", "http://h:8000/api/v1"),
        ("http://h:8000/api/v1/", "http://h:8000/api/v1"),
        ("h:8000", "http://h:8000/api/v1"),
        ("", "http://127.0.0.1:8000/api/v1"),
    ],
)
def test_normalize_base_url(url: str, expected: str) -> None:
    """Any common spelling of the server URL ends in /api/v1."""
    assert normalize_base_url(url) == expected


def test_error_fields_strips_prefixes() -> None:
    """`spec.` and the repeated field in the message are trimmed; root errors go to (root)."""
    # Prepare
    detail = [
        {"loc": ["body", "spec", "partition", "alpha"], "msg": "spec.partition.alpha: too big",
         "field": "spec.partition.alpha"},
        {"loc": ["body", "spec"], "msg": "spec: users_per_round=5 exceeds", "field": "spec"},
        {"loc": ["body", "spec", "rounds"], "msg": "bad"},
    ]  # fmt: skip
    # Execute
    out = error_fields(detail)
    # Assert
    assert out == {
        "partition.alpha": "too big",
        "(root)": "users_per_round=5 exceeds",
        "rounds": "bad",
    }


def test_validate_spec_returns_field_errors() -> None:
    """A 422 from /spec/validate is a result, not an exception."""

    # Prepare
    def handler(req: httpx.Request) -> httpx.Response:
        assert req.headers["authorization"] == "Bearer tok"
        body = {"detail": [{"loc": ["body"], "msg": "spec.seed: negative", "field": "spec.seed"}]}
        return httpx.Response(422, json=body)

    # Execute
    result = _client(handler).validate_spec({"seed": -1})
    # Assert
    assert not result.ok
    assert result.errors == {"seed": "negative"}


@pytest.mark.parametrize(
    ("status", "exc"),
    [(401, ApiAuthError), (403, ApiAuthError), (404, ApiNotFound), (500, ApiError)],
)
def test_http_errors_map_to_types(status: int, exc: type[ApiError]) -> None:
    """Status codes become typed errors with the server's detail in the message."""
    # Prepare
    client = _client(lambda _req: httpx.Response(status, json={"detail": "nope"}))
    # Execute / Assert
    with pytest.raises(exc, match="nope"):
        client.get_run("x")


def test_unreachable_server() -> None:
    """A refused connection is ApiUnreachable naming the URL."""

    # Prepare
    def handler(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=req)

    # Execute / Assert
    with pytest.raises(ApiUnreachable, match="http://lab:8000/api/v1"):
        _client(handler).list_runs()


def test_query_params_drop_empty_values() -> None:
    """Unset filters are not sent, so the API sees only real ones."""
    # Prepare
    seen: dict[str, str] = {}

    def handler(req: httpx.Request) -> httpx.Response:
        seen.update(dict(req.url.params))
        body = {"data": [], "count": 0, "count_exact": True, "status_counts": {}}
        return httpx.Response(200, json={**body, "status_counts_exact": True, "next_cursor": None})

    # Execute
    _client(handler).list_runs(status="", algorithm="fedgen", limit=10, owner=None)
    # Assert
    assert seen == {"algorithm": "fedgen", "limit": "10"}


def test_bad_token_or_url_is_an_api_error_not_a_crash() -> None:
    """A pasted non-ASCII token or a malformed URL becomes a readable ApiError."""
    import pytest

    from dashboard.client import ApiAuthError, ApiUnreachable, LabClient

    with pytest.raises(ApiAuthError, match="non-ASCII"):
        LabClient("http://127.0.0.1:8000", "fgl_abc\u2026")
    with pytest.raises(ApiUnreachable):
        LabClient("http://[::1", "t").me()


def test_workers_reads_the_live_workers() -> None:
    """GET /workers with the token; the body as the API sends it."""
    # Prepare
    worker = {
        "name": "cpu-slot0@w1",
        "host": "w1",
        "queues": ["cpu"],
        "slots": 1,
        "threads": 1,
        "devices": [{"kind": "cpu", "cores": 2}],
        "code_version": None,
        "datasets": None,
        "started_at": "2026-12-01T11:00:00Z",
        "heartbeat_at": "2026-12-01T11:59:50Z",
        "running": [],
    }
    body = {"workers": [worker], "slots": 1, "busy": 0}

    def handler(req: httpx.Request) -> httpx.Response:
        assert (req.method, req.url.path) == ("GET", "/api/v1/workers")
        assert req.headers["authorization"] == "Bearer tok"
        return httpx.Response(200, json=body)

    # Execute / Assert
    answer = _client(handler).workers()
    assert answer.workers[0].devices[0].cores == 2
    assert answer.model_dump(mode="json", exclude_unset=True) == body


def _params_of(call: object) -> dict[str, str]:
    """The query string one client call sends (`call` gets the client)."""
    seen: dict[str, str] = {}

    def handler(req: httpx.Request) -> httpx.Response:
        seen.update(dict(req.url.params), path=req.url.path)
        return httpx.Response(200, json={"runs": []})

    try:
        call(_client(handler))  # type: ignore[operator]
    except ApiError:  # an answer not of the endpoint's model: only the request matters here
        pass
    return seen


def test_compare_sends_since_round_only_when_given() -> None:
    """One `compare`: a whole fetch has no since_round; a live refresh sends it (0 included)."""
    # Execute
    whole = _params_of(lambda c: c.compare(["r1", "r2"], max_points=50, metrics=["test_acc"]))
    since = _params_of(lambda c: c.compare(["r1"], metrics=None, since_round=0))
    # Assert
    assert whole == {
        "path": "/api/v1/compare", "run_ids": "r1,r2", "max_points": "50", "metrics": "test_acc"
    }  # fmt: skip
    assert since == {"path": "/api/v1/compare", "run_ids": "r1", "since_round": "0"}


def test_difference_sends_order_only_when_given() -> None:
    """One `difference`: `order` is sent when asked (better_first), else the server's default."""
    # Execute
    given = _params_of(lambda c: c.difference(["a1"], ["b1", "b2"], "best"))
    better = _params_of(lambda c: c.difference(["a1"], ["b1"], order="better_first"))
    # Assert
    assert given == {"path": "/api/v1/difference", "a": "a1", "b": "b1,b2", "statistic": "best"}
    assert better == {
        "path": "/api/v1/difference", "a": "a1", "b": "b1", "statistic": "final",
        "order": "better_first",
    }  # fmt: skip
