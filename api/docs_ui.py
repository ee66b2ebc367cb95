"""The API's documentation pages, /docs (Swagger UI) and /redoc, served with no CDN.

FastAPI's default pages load Swagger UI and ReDoc from a CDN, so on a lab network without
internet /docs is blank. This is FastAPI's self-hosted docs recipe: the default pages are
turned off (`docs_url=None, redoc_url=None` in `api.main.create_app`), the JavaScript and CSS
come from the installed `fastapi-offline` package (Swagger UI 5, ReDoc 2, a favicon: the
files only; its app factory is not used) mounted at /docs/static, and two routes render the
pages against them. Swagger UI's online spec validator is off (`validatorUrl: null`): it
would load a badge from the internet. ReDoc's bundle draws its footer logo from Redocly's CDN
whatever its options say, so /redoc loads a copy of the bundle (REDOC_JS_URL) in which that one
address is the local favicon.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import TypedDict

from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.staticfiles import StaticFiles
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

DOCS_URL = "/docs"
REDOC_URL = "/redoc"
STATIC_URL = "/docs/static"
REDOC_JS_URL = "/docs/redoc.offline.js"  # outside STATIC_URL: the mount would answer first
# The files the pages load, as the installed package ships them.
ASSETS = ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png")
REDOC_CDN_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"


class PageArgs(TypedDict):
    """What both pages take alike (keyword arguments of FastAPI's page functions)."""

    openapi_url: str
    title: str


def offline_redoc_js(folder: Path) -> bytes:
    """ReDoc's bundle with its CDN logo replaced by the favicon, relative to the page (/redoc),
    so a prefix a proxy strips (root_path) is kept."""
    bundle = (folder / "redoc.standalone.js").read_bytes()
    return bundle.replace(REDOC_CDN_LOGO, STATIC_URL.lstrip("/").encode() + b"/favicon.png")


def assets_dir() -> Path:
    """The installed package's folder of Swagger UI and ReDoc files (checked, so a broken
    install fails at start rather than as a blank page)."""
    folder = Path(str(files("fastapi_offline") / "static"))
    missing = [name for name in ASSETS if not (folder / name).is_file()]
    if missing:
        raise RuntimeError(
            f"the docs' files {', '.join(missing)} are missing from {folder}; "
            "reinstall the service extra (pip install -e '.[service]')"
        )
    return folder


def install(app: FastAPI) -> None:
    """Mount the files and add /docs, its OAuth2 redirect and /redoc (none in the schema)."""
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2_redirect_url = app.swagger_ui_oauth2_redirect_url or "/docs/oauth2-redirect"
    folder = assets_dir()
    app.mount(STATIC_URL, StaticFiles(directory=folder), name="docs-static")
    redoc_js = offline_redoc_js(folder)

    def url(request: Request, path: str) -> str:
        # Behind a proxy that strips a prefix, the page's URLs must carry it again.
        return f"{request.scope.get('root_path', '')}{path}"

    def page(request: Request, name: str) -> PageArgs:
        """What both pages take alike: the OpenAPI document's URL and the title."""
        return PageArgs(openapi_url=url(request, openapi_url), title=f"{app.title} - {name}")

    async def swagger_ui(request: Request) -> HTMLResponse:
        static = url(request, STATIC_URL)
        return get_swagger_ui_html(
            **page(request, "Swagger UI"),
            oauth2_redirect_url=url(request, oauth2_redirect_url),
            swagger_js_url=f"{static}/swagger-ui-bundle.js",
            swagger_css_url=f"{static}/swagger-ui.css",
            swagger_favicon_url=f"{static}/favicon.png",
            swagger_ui_parameters={**(app.swagger_ui_parameters or {}), "validatorUrl": None},
        )

    async def redoc_bundle() -> Response:
        return Response(redoc_js, media_type="text/javascript")

    async def oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    async def redoc(request: Request) -> HTMLResponse:
        static = url(request, STATIC_URL)
        return get_redoc_html(
            **page(request, "ReDoc"),
            redoc_js_url=url(request, REDOC_JS_URL),
            redoc_favicon_url=f"{static}/favicon.png",
            with_google_fonts=False,  # fonts from Google would need the internet too
        )

    app.add_api_route(DOCS_URL, swagger_ui, methods=["GET"], include_in_schema=False)
    app.add_api_route(
        oauth2_redirect_url, oauth2_redirect, methods=["GET"], include_in_schema=False
    )
    app.add_api_route(REDOC_URL, redoc, methods=["GET"], include_in_schema=False)
    app.add_api_route(REDOC_JS_URL, redoc_bundle, methods=["GET"], include_in_schema=False)
