"""/docs and /redoc work offline: every script, stylesheet and icon they load is served by
the app itself (from the installed package), with the right content type."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import sessionmaker

from api.main import create_app
from lab.config import Settings

TYPES = {".js": "javascript", ".css": "text/css", ".png": "image/png"}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The app without a database: the docs pages never touch one."""
    home = tmp_path_factory.mktemp("home")
    settings = Settings(home=home, database_url=f"sqlite:///{home}/x.db", broker_url="memory://")
    with TestClient(create_app(settings, session_factory=sessionmaker())) as c:
        yield c


def _urls(html: str) -> list[str]:
    return re.findall(r'(?:src|href)="([^"]+)"', html)


@pytest.mark.parametrize(("page", "needs"), [("/docs", 3), ("/redoc", 2)])
def test_docs_pages_load_only_local_files(client: TestClient, page: str, needs: int) -> None:
    r = client.get(page)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    urls = _urls(r.text)
    assert len(urls) == needs, urls  # swagger: css, icon, js; redoc: icon, js
    assert "https://" not in r.text
    assert "http://" not in r.text
    for url in urls:
        assert url.startswith("/"), url
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert TYPES[Path(url).suffix] in asset.headers["content-type"], url
        assert len(asset.content) > 1000, url
    spec = re.search(r"url: '([^']+)'|spec-url=\"([^\"]+)\"", r.text)
    assert spec is not None
    openapi = client.get(spec[1] or spec[2])
    assert openapi.status_code == 200
    assert openapi.json()["info"]["title"] == "FedGen Lab"


def test_swagger_ui_has_no_online_validator(client: TestClient) -> None:
    """Swagger UI's default validator loads a badge from the internet: it is switched off."""
    assert '"validatorUrl": null' in client.get("/docs").text


def test_oauth2_redirect_is_served(client: TestClient) -> None:
    r = client.get("/docs/oauth2-redirect")
    assert r.status_code == 200
    assert "oauth2" in r.text.lower()


def test_redoc_bundle_asks_no_cdn_for_its_logo(client: TestClient) -> None:
    """ReDoc's footer logo comes from Redocly's CDN in the shipped bundle; the served copy
    points it at the local favicon, and the page loads that copy."""
    (js,) = [u for u in _urls(client.get("/redoc").text) if u.endswith(".js")]
    bundle = client.get(js).content
    assert b"cdn.redoc.ly" not in bundle
    assert b'src:"docs/static/favicon.png"' in bundle
    assert client.get("/docs/static/favicon.png").status_code == 200
