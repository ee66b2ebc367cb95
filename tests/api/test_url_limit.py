"""The longest URL a member may send reaches the app: the query limits of the run-id lists
(/difference's `a` and `b`, /compare's `run_ids`) fit in what uvicorn's HTTP parser reads
(api.limits.MAX_URL_BYTES), tried on a live API (uvicorn on loopback, as `fedgen-lab api`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from api.limits import MAX_URL_BYTES
from api.routes.difference import MAX_IDS_CHARS
from tests.support.live_api import LiveApi, live_api


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApi]:
    with live_api(tmp_path_factory.mktemp("live")) as api:
        yield api


def _ids(chars: int) -> str:
    """Comma-separated fresh run ids, as many as fit in `chars` characters."""
    ids = [str(uuid.uuid4()) for _ in range((chars + 1) // 37)]
    return ",".join(ids)


@pytest.mark.timeout(120)
def test_a_difference_of_the_longest_id_lists_reaches_the_app(live: LiveApi) -> None:
    # Prepare: each side at its limit, with commas sent percent-encoded (as requests does)
    a, b = _ids(MAX_IDS_CHARS), _ids(MAX_IDS_CHARS)
    assert MAX_IDS_CHARS - 37 < len(a) <= MAX_IDS_CHARS
    query = httpx.QueryParams({"a": a, "b": b}).__str__().replace(",", "%2C")
    # Execute
    with httpx.Client(base_url=f"{live.url}/api/v1", timeout=60) as c:
        r = c.get(f"/difference?{query}", headers=live.headers("alice"))
    # Assert: the app answered (no such runs), not the HTTP parser
    assert r.status_code == 404, r.text[:300]
    assert r.json()["detail"].startswith("a: unknown run ids")


@pytest.mark.timeout(120)
def test_compare_of_the_longest_id_list_reaches_the_app(live: LiveApi) -> None:
    # Prepare
    schema = live.app.openapi()["paths"]["/api/v1/compare"]["get"]["parameters"]
    limit = next(p for p in schema if p["name"] == "run_ids")["schema"]["maxLength"]
    query = httpx.QueryParams({"run_ids": _ids(limit)}).__str__().replace(",", "%2C")
    # Execute
    with httpx.Client(base_url=f"{live.url}/api/v1", timeout=60) as c:
        r = c.get(f"/compare?{query}", headers=live.headers("alice"))
    # Assert: refused by the app (more runs than FEDGEN_MAX_COMPARE_RUNS), naming the field
    assert r.status_code == 422, r.text[:300]
    assert [d["field"] for d in r.json()["detail"]] == ["run_ids"]


@pytest.mark.timeout(120)
def test_a_url_over_the_limit_is_refused_by_the_http_parser(live: LiveApi) -> None:
    """MAX_URL_BYTES is the server's real limit: one byte under reaches the app, one over not."""
    # Prepare: /health?pad=... of exactly the limit, and one byte more
    head = "/health?pad="
    at_limit = head + "x" * (MAX_URL_BYTES - len(head))
    # Execute
    with httpx.Client(base_url=live.url, timeout=60) as c:
        ok = c.get(at_limit)
        over = c.get(at_limit + "x")
    # Assert
    assert ok.status_code == 200, ok.text[:300]
    assert over.status_code == 400
    assert "Invalid HTTP request" in over.text
