"""The HTTP plumbing of the client: one httpx client on the lab's /api/v1, typed answers parsed
into the API's own response models (vocab.schemas, declared once for server, dashboard and this
client), errors turned into `fedgen_lab.errors`, retries on 503 and 429 honouring Retry-After,
and the run event stream (server-sent events) read as (event, data) pairs."""

from __future__ import annotations

import functools
import json
import os
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, TypeAlias, TypeVar

import httpx
from pydantic import TypeAdapter, ValidationError

from fedgen_lab.errors import (
    LabAuthError,
    LabBusy,
    LabError,
    LabNotFound,
    LabUnreachable,
    LabValidationError,
    describe,
)

DEFAULT_URL = "http://127.0.0.1:8000"
API_PREFIX = "/api/v1"
# Retries of a 503 (database or broker down) or 429 (rate limit): at most this many, each waiting
# the server's Retry-After (capped) or, without one, a doubling back-off from RETRY_BASE_S.
MAX_RETRIES = 5
RETRY_BASE_S = 0.5
RETRY_CAP_S = 30.0
Model = TypeVar("Model")
# What answers the requests instead of the network (httpx.MockTransport in tests), named here so
# that a caller passes one without importing an HTTP library of its own.
Transport: TypeAlias = httpx.BaseTransport


def normalize_base_url(url: str | None) -> str:
    """`http://host:8000`, `.../api/v1` or `.../api/v1/` all become `http://host:8000/api/v1`."""
    url = (url or DEFAULT_URL).strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        url = "http://" + url
    if not url.endswith(API_PREFIX):
        url += API_PREFIX
    return url


def settings_from_env() -> tuple[str, str]:
    """Base URL and token from FEDGEN_API_URL / FEDGEN_TOKEN (defaults: localhost, empty)."""
    return os.environ.get("FEDGEN_API_URL", DEFAULT_URL), os.environ.get("FEDGEN_TOKEN", "")


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}  # one per response type: building one compiles it


def _adapter(model: type[Model]) -> TypeAdapter[Model]:
    adapter: TypeAdapter[Model] | None = _ADAPTERS.get(model)
    if adapter is None:
        adapter = _ADAPTERS[model] = TypeAdapter(model)
    return adapter


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """httpx's verifying context, built once a process (loading the CA bundle takes ~60 ms)."""
    return httpx.create_ssl_context()


def retry_after(resp: httpx.Response, attempt: int) -> float:
    """Seconds to wait before retrying `resp` (a 503 or 429): its Retry-After when it gives
    seconds, else RETRY_BASE_S doubled per attempt; never more than RETRY_CAP_S."""
    header = resp.headers.get("Retry-After", "")
    try:
        wait = float(header)
    except ValueError:
        wait = RETRY_BASE_S * 2**attempt
    return max(0.0, min(wait, RETRY_CAP_S))


def parse_sse(
    lines: Iterator[str], until: float | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each complete server-sent event of `lines` as (event name, JSON data); a malformed event
    is skipped. With `until` (time.monotonic), it stops at the first line past it that is not
    inside an event (a stream that keeps sending would otherwise hold a caller that waits
    for a pause)."""
    name, data = "message", ""
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line and data:
            try:
                body = json.loads(data)
            except ValueError:
                body = None
            if isinstance(body, dict):
                yield name, body
            name, data = "message", ""
        if until is not None and not data and time.monotonic() > until:
            return


class Http:
    """One httpx client on the lab's /api/v1 with the token; typed, retrying requests."""

    def __init__(
        self,
        base_url: str | None,
        token: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        headers: dict[str, str] | None = None,
        max_retries: int = MAX_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = normalize_base_url(base_url)
        self.token = token = token.strip()
        if not token.isascii():
            # A pasted token with a typographic character would fail deep inside httpx.
            raise LabAuthError("The API token has non-ASCII characters; paste it again.", 401)
        sent = {"Authorization": f"Bearer {token}"} if token else {}
        sent.update(headers or {})
        self.timeout = timeout
        self.max_retries = max_retries
        self._sleep = sleep
        try:
            self.client = httpx.Client(
                base_url=self.base_url,
                headers=sent,
                timeout=timeout,
                transport=transport,
                verify=_ssl_context(),
            )
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError) as exc:
            raise LabUnreachable(f"{base_url!r} is not a valid lab server URL: {exc}") from exc

    def close(self) -> None:
        """Release the connection pool."""
        self.client.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The answer of a request under 400; a 503 or 429 is retried (Retry-After honoured)
        up to `max_retries` times; anything else >= 400 raises its LabError."""
        params = kwargs.pop("params", None)
        if params:
            params = {k: v for k, v in params.items() if v is not None and v != ""}
        attempt = 0
        while True:
            try:
                resp = self.client.request(method, path, params=params, **kwargs)
            except (httpx.TransportError, httpx.InvalidURL) as exc:
                raise self.unreachable(exc) from exc
            if resp.status_code < 400:
                return resp
            if resp.status_code in (429, 503) and attempt < self.max_retries:
                self._sleep(retry_after(resp, attempt))
                attempt += 1
                continue
            self.raise_for(resp, retried=attempt)

    def unreachable(self, exc: Exception) -> LabUnreachable:
        """The error of a request that did not reach the server, or got no answer."""
        if isinstance(exc, httpx.TimeoutException):
            return LabUnreachable(f"The lab server at {self.base_url} did not answer in time.")
        return LabUnreachable(
            f"Cannot reach the lab server at {self.base_url}. Is it running (`fedgen-lab up`)?"
        )

    def raise_for(self, resp: httpx.Response, retried: int = 0) -> NoReturn:
        """Raise the LabError that a response with status >= 400 stands for."""
        try:
            body = resp.json()
            detail = body.get("detail", resp.text) if isinstance(body, dict) else body
        except ValueError:
            detail = resp.text
        code = resp.status_code
        said = describe(detail)
        if code in (401, 403):
            what = "rejected the token" if code == 401 else "refused this action"
            raise LabAuthError(f"The lab server {what}: {said}", code, detail)
        if code == 404:
            raise LabNotFound(f"Not found: {said}", code, detail)
        if code in (400, 422):
            raise LabValidationError(f"Rejected: {said}", code, detail)
        if code in (429, 503):
            after = f" after {retried} retries" if retried else ""
            raise LabBusy(f"Server busy ({code}){after}: {said}", code, detail)
        raise LabError(f"Server error {code}: {said}", code, detail)

    def model(self, model: type[Model], method: str, path: str, **kwargs: Any) -> Model:
        """The answer parsed into the endpoint's response model; an answer of another shape (a
        server of another version) is a LabError that says so."""
        resp = self.request(method, path, **kwargs)
        try:
            return _adapter(model).validate_json(resp.content)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(body)"
            raise LabError(
                f"The lab server's answer to {method} {path} is not what this client reads "
                f"({where}: {first['msg']}); is the server another version?",
                resp.status_code,
            ) from exc

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        """The answer's JSON body as is."""
        return self.request(method, path, **kwargs).json()

    def events(
        self,
        path: str,
        params: dict[str, Any],
        read_timeout: float | None = None,
        until: float | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """The event stream at `path` as (event, data) pairs until the server ends it (a run
        that ended), with `read_timeout` nothing arrives for that long, or with `until` the
        first event boundary past that time.monotonic()."""
        timeout = httpx.Timeout(self.timeout, read=read_timeout)
        attempt = 0
        while True:
            try:
                with self.client.stream("GET", path, params=params, timeout=timeout) as resp:
                    if resp.status_code in (429, 503) and attempt < self.max_retries:
                        resp.read()
                        self._sleep(retry_after(resp, attempt))
                        attempt += 1
                        continue
                    if resp.status_code >= 400:
                        resp.read()
                        self.raise_for(resp, retried=attempt)
                    yield from parse_sse(resp.iter_lines(), until)
                    return
            except httpx.ReadTimeout:
                return
            except (httpx.TransportError, httpx.InvalidURL) as exc:
                raise self.unreachable(exc) from exc
