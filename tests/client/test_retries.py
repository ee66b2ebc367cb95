"""fedgen_lab's retries and errors without a server: 503 and 429 are retried after their
Retry-After, other errors become exceptions carrying the API's per-field messages."""

from __future__ import annotations

import httpx
import pytest

import fedgen_lab
from fedgen_lab.http import Http


def _http(answers: list[httpx.Response], slept: list[float]) -> Http:
    def handler(request: httpx.Request) -> httpx.Response:
        return answers.pop(0)

    return Http("http://lab", "t", transport=httpx.MockTransport(handler), sleep=slept.append)


def test_503_and_429_are_retried_after_retry_after() -> None:
    slept: list[float] = []
    http = _http(
        [
            httpx.Response(
                503, json={"detail": "database unavailable"}, headers={"Retry-After": "2"}
            ),
            httpx.Response(429, json={"detail": "slow down"}, headers={"Retry-After": "7"}),
            httpx.Response(429, json={"detail": "slow down"}),
            httpx.Response(200, json={"ok": True}),
        ],
        slept,
    )
    assert http.json("GET", "/x") == {"ok": True}
    assert slept == [2.0, 7.0, 2.0]  # no Retry-After: the back-off's third step (0.5 x 2^2)


def test_a_server_busy_past_the_retries_says_so() -> None:
    slept: list[float] = []
    busy = [httpx.Response(503, json={"detail": "down"}, headers={"Retry-After": "1"})] * 6
    with pytest.raises(fedgen_lab.LabBusy, match="after 5 retries"):
        _http(list(busy), slept).json("GET", "/x")
    assert slept == [1.0] * 5


def test_a_422_carries_each_field_message() -> None:
    detail = [
        {
            "loc": ["body", "spec", "rounds"],
            "field": "spec.rounds",
            "msg": "spec.rounds: must be <= 5000",
        },
        {"loc": ["body", "spec", "lr"], "msg": "must be > 0"},
    ]
    with pytest.raises(fedgen_lab.LabValidationError) as caught:
        _http([httpx.Response(422, json={"detail": detail})], []).json("POST", "/runs")
    assert caught.value.fields == {"rounds": "must be <= 5000", "lr": "must be > 0"}
    assert caught.value.status == 422
    with pytest.raises(fedgen_lab.LabNotFound):
        _http([httpx.Response(404, json={"detail": "no run"})], []).json("GET", "/runs/x")
