"""fedgen_lab's endpoints (`LabApi`, the one client of the dashboard and of `Lab`): URL
handling, error mapping, 422 parsing, the query each call sends and the event stream read for
a moment (httpx MockTransport; no server)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from fedgen_lab import http as http_module
from fedgen_lab.endpoints import LabApi, open_api
from fedgen_lab.errors import (
    LabAuthError,
    LabBusy,
    LabError,
    LabNotFound,
    LabUnreachable,
    LabValidationError,
    error_fields,
)
from fedgen_lab.http import normalize_base_url, parse_sse


def _client(handler: Callable[[httpx.Request], httpx.Response], **kwargs: object) -> LabApi:
    return open_api("http://lab:8000", "tok", transport=httpx.MockTransport(handler), **kwargs)  # type: ignore[arg-type]


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
        {
            "loc": ["body", "spec", "partition", "alpha"],
            "msg": "spec.partition.alpha: too big",
            "field": "spec.partition.alpha",
        },
        {"loc": ["body", "spec"], "msg": "spec: users_per_round=5 exceeds", "field": "spec"},
        {"loc": ["body", "spec", "rounds"], "msg": "bad"},
    ]
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
    [
        (401, LabAuthError),
        (403, LabAuthError),
        (404, LabNotFound),
        (422, LabValidationError),
        (500, LabError),
    ],
)
def test_http_errors_map_to_types(status: int, exc: type[LabError]) -> None:
    """Status codes become typed errors with the server's detail in the message."""
    # Prepare
    client = _client(lambda _req: httpx.Response(status, json={"detail": "nope"}))
    # Execute / Assert
    with pytest.raises(exc, match="nope"):
        client.get_run("x")


def test_unreachable_server() -> None:
    """A refused connection is LabUnreachable naming the URL."""

    # Prepare
    def handler(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=req)

    # Execute / Assert
    with pytest.raises(LabUnreachable, match="http://lab:8000/api/v1"):
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
    """A pasted non-ASCII token or a malformed URL becomes a readable LabError."""
    with pytest.raises(LabAuthError, match="non-ASCII"):
        open_api("http://127.0.0.1:8000", "fgl_abc\u2026")
    with pytest.raises(LabUnreachable):
        open_api("http://[::1", "t").me()


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


def _params_of(call: Callable[[LabApi], object]) -> dict[str, str]:
    """The query string one client call sends (`call` gets the client)."""
    seen: dict[str, str] = {}

    def handler(req: httpx.Request) -> httpx.Response:
        seen.update(dict(req.url.params), path=req.url.path)
        return httpx.Response(200, json={"runs": []})

    try:
        call(_client(handler))
    except LabError:  # an answer not of the endpoint's model: only the request matters here
        pass
    return seen


def test_compare_sends_since_round_only_when_given() -> None:
    """One `compare`: a whole fetch has no since_round; a live refresh sends it (0 included)."""
    # Execute
    whole = _params_of(lambda c: c.compare(["r1", "r2"], max_points=50, metrics=["test_acc"]))
    since = _params_of(lambda c: c.compare(["r1"], metrics=None, since_round=0))
    # Assert
    assert whole == {
        "path": "/api/v1/compare",
        "run_ids": "r1,r2",
        "max_points": "50",
        "metrics": "test_acc",
    }
    assert since == {"path": "/api/v1/compare", "run_ids": "r1", "since_round": "0"}


def test_difference_sends_order_only_when_given() -> None:
    """One `difference`: `order` is sent when asked (better_first), else the server's default."""
    # Execute
    given = _params_of(lambda c: c.difference(["a1"], ["b1", "b2"], "best"))
    better = _params_of(lambda c: c.difference(["a1"], ["b1"], order="better_first"))
    # Assert
    assert given == {"path": "/api/v1/difference", "a": "a1", "b": "b1,b2", "statistic": "best"}
    assert better == {
        "path": "/api/v1/difference",
        "a": "a1",
        "b": "b1",
        "statistic": "final",
        "order": "better_first",
    }


# Read as a token, a created token (with its secret) and an empty list of tokens alike.
TOKEN_BODY: dict[str, Any] = {
    "id": "t1",
    "user": "alice",
    "name": "laptop",
    "created_at": "2026-12-01T11:00:00Z",
    "last_used_at": None,
    "expires_at": None,
    "revoked_at": None,
    "state": "active",
    "token": "fgl_secret",
    "data": [],
    "count": 0,
}


def test_token_calls() -> None:
    """list (GET), create (POST with a name and days when given), revoke (DELETE)."""
    # Prepare
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=TOKEN_BODY)

    # Execute
    with _client(handler) as c:
        c.list_tokens()
        c.create_token("laptop", 30)
        c.create_token("ci")
        c.revoke_token("t1")
    # Assert
    assert [(r.method, r.url.path) for r in seen] == [
        ("GET", "/api/v1/tokens"),
        ("POST", "/api/v1/tokens"),
        ("POST", "/api/v1/tokens"),
        ("DELETE", "/api/v1/tokens/t1"),
    ]
    assert json.loads(seen[1].content) == {"name": "laptop", "expires_days": 30}
    assert json.loads(seen[2].content) == {"name": "ci"}


def test_without_retries_a_busy_server_is_said_at_once() -> None:
    """max_retries=0 (the dashboard's: a page says so and its refresh asks again): one request,
    no wait, a LabBusy that names no retries."""
    # Prepare
    sent: list[httpx.Request] = []
    slept: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(503, json={"detail": "database unavailable"})

    # Execute
    with pytest.raises(LabBusy) as caught:
        _client(handler, max_retries=0, sleep=slept.append).me()
    # Assert
    assert caught.value.message == "Server busy (503): database unavailable"
    assert (len(sent), slept) == (1, [])


PLOT_BODY: dict[str, Any] = {
    "sweep_id": "s1",
    "x": "partition.alpha",
    "x_axis": "field",
    "x_unit": None,
    "by": "algorithm",
    "statistic": "final",
    "target": None,
    "unit": "fraction",
    "interval": "std",
    "level": None,
    "log_x": True,
    "series": [
        {
            "by_value": "fedavg",
            "points": [
                {
                    "x": 0.1,
                    "mean": 0.8,
                    "std": 0.01,
                    "lo": 0.79,
                    "hi": 0.81,
                    "n": 2,
                    "n_total": 2,
                    "reached": None,
                    "round": None,
                    "censored": False,
                    "run_ids": ["r1", "r2"],
                    "values": [0.79, 0.81],
                }
            ],
        }
    ],
    "groups": [],
    "excluded": {"counts": {}, "run_ids": {}},
    "warnings": [],
    "varying": ["partition.alpha", "algorithm.name"],
}


def test_plot_data_is_its_model_and_its_csv_is_text() -> None:
    """GET /sweeps/{id}/plot-data answers a PlotData; format=csv answers the file's text."""
    # Prepare
    seen: list[dict[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(dict(request.url.params))
        if request.url.params["format"] == "csv":
            return httpx.Response(200, text="by,x,mean\nfedavg,0.1,80.0\n")
        return httpx.Response(200, json=PLOT_BODY)

    # Execute
    with _client(handler) as c:
        data = c.plot_data("s1", x="partition.alpha", statistic="final")
        csv = c.plot_csv("s1", x="partition.alpha", statistic="final")
    # Assert
    assert data.series[0].points[0].run_ids == ["r1", "r2"]
    assert csv.startswith("by,x,mean")
    assert seen[0] == {
        "x": "partition.alpha",
        "by": "algorithm",
        "statistic": "final",
        "interval": "std",
        "format": "json",
    }
    assert seen[1]["format"] == "csv"


def _sse(*events: tuple[str, dict[str, object]]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def test_events_now_reads_the_stream_until_it_ends() -> None:
    """A run that ended: its rounds after since_round, then its status, in order."""
    # Prepare
    seen: list[dict[str, str]] = []
    body = _sse(
        ("round", {"round": 3, "metrics": {"test_acc": 0.5}}),
        ("status", {"status": "succeeded"}),
    )

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(dict(request.url.params))
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    # Execute
    events = _client(handler).events_now("r1", since_round=2, wait_s=5.0)
    # Assert
    assert seen == [{"since_round": "2"}]
    assert events == [
        ("round", {"round": 3, "metrics": {"test_acc": 0.5}}),
        ("status", {"status": "succeeded"}),
    ]


def test_a_stream_read_until_a_moment_stops_between_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream that keeps sending ends at the first boundary past `until`, never inside an
    event; a malformed event is skipped."""
    # Prepare: a clock the stream moves past `until` (10) in the middle of its third event
    clock = [0.0]
    monkeypatch.setattr(http_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))

    def lines() -> Iterator[str]:
        yield from ["event: round", 'data: {"round": 0}', ""]
        yield from ["event: round", "data: {not json", ""]
        yield from ["event: round", 'data: {"round": 1}']
        clock[0] = 11.0
        yield from [""]
        yield from ["event: round", 'data: {"round": 2}', ""]

    # Execute
    read = list(parse_sse(lines(), until=10.0))
    every = list(parse_sse(lines()))
    # Assert
    assert read == [("round", {"round": 0}), ("round", {"round": 1})]
    assert [d["round"] for _, d in every] == [0, 1, 2]


def test_a_refused_stream_raises_its_error() -> None:
    """A 404 on the event stream is LabNotFound, like any request."""
    with pytest.raises(LabNotFound, match="no run"):
        _client(lambda _r: httpx.Response(404, json={"detail": "no run"})).events_now("x")
