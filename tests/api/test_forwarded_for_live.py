"""A client's address is the socket's peer unless FEDGEN_TRUSTED_PROXIES says otherwise, tried
from outside on the real `fedgen-lab api` process on loopback: a forged `X-Forwarded-For` from
127.0.0.1 (which uvicorn believes by default) neither escapes the failure budget nor lands in
the audit log. The dashboard's server (Streamlit's uvicorn) is started to believe it only from
FEDGEN_TRUSTED_PROXIES too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from uvicorn.config import Config
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from admin.serve import dashboard_env
from tests.support.api_process import ApiProcess, api_process

pytestmark = pytest.mark.postgres
BOGUS = "fgl_bogus_token_of_a_stranger"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiProcess]:
    """`fedgen-lab api` with FEDGEN_TRUSTED_PROXIES empty and a budget of 5 failures a day."""
    with api_process(tmp_path_factory.mktemp("xff"), FEDGEN_AUTH_FAIL_RATE="5/day") as a:
        yield a


@pytest.mark.timeout(180)
def test_forged_forwarded_for_from_loopback_counts_against_the_peer(api: ApiProcess) -> None:
    """Bogus tokens, each with a new X-Forwarded-For: the 6th is 429 (the peer's budget);
    an audited act with a forged header records 127.0.0.1, not the header."""
    with api.client() as c:
        # Execute
        codes = [
            c.get(
                "/me", headers=api.headers(BOGUS, **{"X-Forwarded-For": f"6.6.6.{i}"})
            ).status_code
            for i in range(8)
        ]
        made = c.post(
            "/tokens",
            json={"name": "forged"},
            headers=api.headers("alice", **{"X-Forwarded-For": "6.6.6.6"}),
        )
        rows = c.get(
            "/audit", params={"action": "token.create"}, headers=api.headers("admin")
        ).json()["data"]
    # Assert
    assert codes == [401] * 5 + [429] * 3
    assert made.status_code == 201, made.text
    assert [r["address"] for r in rows] == ["127.0.0.1"]


@pytest.mark.timeout(180)
def test_a_listed_loopback_proxy_names_the_client(tmp_path: Path) -> None:
    """FEDGEN_TRUSTED_PROXIES=127.0.0.1 (a proxy on the same host): the header is believed,
    so each forwarded client has its own budget and the audit row names it."""
    with (
        api_process(
            tmp_path, FEDGEN_AUTH_FAIL_RATE="2/day", FEDGEN_TRUSTED_PROXIES="127.0.0.1"
        ) as api,
        api.client() as c,
    ):
        # Execute
        codes = [
            c.get(
                "/me", headers=api.headers(BOGUS, **{"X-Forwarded-For": f"198.51.100.{i}"})
            ).status_code
            for i in (1, 1, 1, 2)
        ]
        c.post(
            "/tokens",
            json={"name": "proxied"},
            headers=api.headers("alice", **{"X-Forwarded-For": "198.51.100.9"}),
        )
        rows = c.get("/audit", params={"action": "token.create"}, headers=api.headers("admin"))
    # Assert
    assert codes == [401, 401, 429, 401]
    assert [r["address"] for r in rows.json()["data"]] == ["198.51.100.9"]


def test_the_dashboards_server_believes_forwarded_for_only_from_trusted_proxies() -> None:
    """The dashboard's environment sets uvicorn's FORWARDED_ALLOW_IPS to
    FEDGEN_TRUSTED_PROXIES: empty, a loopback peer's header is ignored; listed, believed."""
    seen: list[Any] = []

    async def app(scope: dict[str, Any], _receive: Any, _send: Any) -> None:
        seen.append(scope["client"])

    async def call(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
        for key, value in dashboard_env(env).items():
            monkeypatch.setenv(key, value)
        cfg = Config(app)  # as Streamlit builds it: forwarded_allow_ips from the environment
        mw = ProxyHeadersMiddleware(cast(Any, app), trusted_hosts=cfg.forwarded_allow_ips)
        scope = {
            "type": "http",
            "client": ("127.0.0.1", 5000),
            "headers": [(b"x-forwarded-for", b"6.6.6.6")],
        }
        await mw(scope, None, None)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        asyncio.run(call({"FEDGEN_TRUSTED_PROXIES": ""}, mp))
    with pytest.MonkeyPatch.context() as mp:
        asyncio.run(call({"FEDGEN_TRUSTED_PROXIES": "127.0.0.1"}, mp))
    assert seen[0] == ("127.0.0.1", 5000)
    assert seen[1][0] == "6.6.6.6"
