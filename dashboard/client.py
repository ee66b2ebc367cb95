"""The dashboard's only way to the lab server: a thin, typed httpx client of the REST API.

Every call raises `ApiError` (or a subclass) with a human-readable message, so pages
can show a clear sentence instead of a stack trace when the server is down, the
token is wrong or a request is rejected. Answers come back parsed into the API's own response
models (api.schemas.*, declared once for both sides of the wire): pages read attributes.
"""

from __future__ import annotations

import functools
import os
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

import httpx
from pydantic import TypeAdapter, ValidationError

from api.schemas.analysis import Difference, TimingTable
from api.schemas.checkpoints import CheckpointsPublic
from api.schemas.results import MetricsPublic, UsersPublic
from api.schemas.runs import RunInfoPublic, RunPublic, RunsPublic, StreamToken
from api.schemas.spec import SpecDefaults, SpecValidated
from api.schemas.studies import StudiesPublic, StudyDefinition, StudyLaunched, StudyResults
from api.schemas.sweeps import SweepPublic, SweepsPublic, SweepSummary
from api.schemas.tokens import TokenCreated, TokenPublic, TokensPublic
from api.schemas.trash import SweepRestored, TrashPublic
from api.schemas.usage import UsageList
from api.schemas.users import Health, UserPublic
from api.schemas.webhooks import (
    DeliveriesPublic,
    DeliveryPublic,
    WebhookPublic,
    WebhooksPublic,
)
from api.schemas.workers import WorkersPublic
from dashboard import sse
from dashboard.browser_address import browser_address
from dashboard.error_detail import describe, error_fields

DEFAULT_URL = "http://127.0.0.1:8000"
API_PREFIX = "/api/v1"
Model = TypeVar("Model")


class ApiError(Exception):
    """A request that did not succeed; `message` is meant for the user."""

    def __init__(self, message: str, status: int | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.detail = detail


class ApiUnreachable(ApiError):
    """The server could not be reached at all (refused, DNS, timeout)."""


class ApiAuthError(ApiError):
    """The server rejected the token (401) or the action (403)."""


class ApiNotFound(ApiError):
    """The resource does not exist (404)."""


@dataclass(frozen=True)
class Validation:
    """The outcome of POST /spec/validate: the normalised spec or field -> message errors, and
    field -> message warnings of a valid spec (e.g. a folder the server's host cannot see)."""

    ok: bool
    spec: dict[str, Any] | None = None
    errors: dict[str, str] = field(default_factory=dict)
    warnings: dict[str, str] = field(default_factory=dict)


def normalize_base_url(url: str) -> str:
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


# One adapter per response type (building one compiles its validator).
_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def _adapter(model: type[Model]) -> TypeAdapter[Model]:
    adapter: TypeAdapter[Model] | None = _ADAPTERS.get(model)
    if adapter is None:
        adapter = _ADAPTERS[model] = TypeAdapter(model)
    return adapter


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """httpx's default verifying context, built once a process: building it loads the CA
    bundle (~60 ms), and a page creates a client per API call."""
    return httpx.create_ssl_context()


class LabClient:
    """Typed wrapper around the /api/v1 endpoints. Cheap to create; one httpx.Client each."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        token: str = "",
        *,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        forwarded_for: str | None = None,
    ) -> None:
        self.base_url = normalize_base_url(base_url)
        self.token = token = token.strip()
        if not token.isascii():
            # A pasted token with a typographic character would fail deep inside httpx.
            raise ApiAuthError("The API token has non-ASCII characters; paste it again.", 401)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # The browser's address (default: this Streamlit session's), for the API's failure
        # budgets; believed only from FEDGEN_TRUSTED_PROXIES.
        browser = forwarded_for or browser_address()
        if browser:
            headers["X-Forwarded-For"] = browser
        try:
            self._http = httpx.Client(
                base_url=self.base_url,
                headers=headers,
                timeout=timeout,
                transport=transport,
                verify=_ssl_context(),
            )
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError) as exc:
            raise ApiUnreachable(f"{base_url!r} is not a valid lab server URL: {exc}") from exc

    def close(self) -> None:
        """Release the connection pool."""
        self._http.close()

    def __enter__(self) -> LabClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing --------------------------------------------------------------
    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        params = kwargs.pop("params", None)
        if params:
            params = {k: v for k, v in params.items() if v is not None and v != ""}
        try:
            resp = self._http.request(method, path, params=params, **kwargs)
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise self._unreachable(exc) from exc
        if resp.status_code < 400:
            return resp
        self._raise_for(resp)

    def _unreachable(self, exc: Exception) -> ApiUnreachable:
        """What a page says when the request did not reach the server, or got no answer."""
        if isinstance(exc, httpx.TimeoutException):
            return ApiUnreachable(f"The lab server at {self.base_url} did not answer in time.")
        return ApiUnreachable(
            f"Cannot reach the lab server at {self.base_url}. Is it running (`fedgen-lab up`)?"
        )

    def _raise_for(self, resp: httpx.Response) -> NoReturn:
        """Raise the ApiError that a response with status >= 400 stands for."""
        try:
            detail = resp.json().get("detail", resp.text)
        except ValueError:
            detail = resp.text
        if resp.status_code in (401, 403):
            what = "rejected the token" if resp.status_code == 401 else "refused this action"
            raise ApiAuthError(
                f"The lab server {what}: {describe(detail)}", resp.status_code, detail
            )
        if resp.status_code == 404:
            raise ApiNotFound(f"Not found: {describe(detail)}", 404, detail)
        raise ApiError(
            f"Server error {resp.status_code}: {describe(detail)}", resp.status_code, detail
        )

    def _model(self, model: type[Model], method: str, path: str, **kwargs: Any) -> Model:
        """The answer parsed into the endpoint's response model; an answer of another shape (a
        server of another version) is an ApiError that says so, not a KeyError on a page."""
        resp = self._request(method, path, **kwargs)
        try:
            return _adapter(model).validate_json(resp.content)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(body)"
            raise ApiError(
                f"The lab server's answer to {method} {path} is not what this dashboard reads "
                f"({where}: {first['msg']}); is the server another version?",
                resp.status_code,
            ) from exc

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        body = self._request(method, path, **kwargs).json()
        return body if isinstance(body, dict) else {"data": body}

    # -- service ---------------------------------------------------------------
    def health(self) -> Health:
        """GET /health."""
        return self._model(Health, "GET", "/health")

    def me(self) -> UserPublic:
        """GET /me: who the token belongs to."""
        return self._model(UserPublic, "GET", "/me")

    def workers(self) -> WorkersPublic:
        """GET /workers: the live workers (host, slots, devices, datasets, runs held), slot totals."""
        return self._model(WorkersPublic, "GET", "/workers")

    def usage(self) -> UsageList:
        """GET /usage: what members' runs store against their quotas (an admin: every member)."""
        return self._model(UsageList, "GET", "/usage")

    # -- tokens ----------------------------------------------------------------
    def list_tokens(self) -> TokensPublic:
        """GET /tokens: yours, newest first (name, created, last used, expires, revoked)."""
        return self._model(TokensPublic, "GET", "/tokens")

    def create_token(self, name: str, expires_days: int | None = None) -> TokenCreated:
        """POST /tokens: the new token; its secret (`token`) is in this answer only."""
        body = {"name": name, **({"expires_days": expires_days} if expires_days else {})}
        return self._model(TokenCreated, "POST", "/tokens", json=body)

    def revoke_token(self, token_id: str) -> TokenPublic:
        """DELETE /tokens/{id}: the token, revoked (401 from its next request on)."""
        return self._model(TokenPublic, "DELETE", f"/tokens/{token_id}")

    # -- webhooks --------------------------------------------------------------
    def list_webhooks(self, limit: int = 100) -> WebhooksPublic:
        """GET /webhooks: yours (an admin's list has everyone's)."""
        return self._model(WebhooksPublic, "GET", "/webhooks", params={"limit": limit})

    def create_webhook(
        self, url: str, events: list[str], secret: str | None = None
    ) -> WebhookPublic:
        """POST /webhooks: the new webhook, with its signing secret."""
        body: dict[str, Any] = {"url": url, "events": events}
        if secret:
            body["secret"] = secret
        return self._model(WebhookPublic, "POST", "/webhooks", json=body)

    def delete_webhook(self, webhook_id: str) -> None:
        """DELETE /webhooks/{id} (its deliveries go with it)."""
        self._request("DELETE", f"/webhooks/{webhook_id}")

    def test_webhook(self, webhook_id: str) -> DeliveryPublic:
        """POST /webhooks/{id}/test: the queued `test` delivery."""
        return self._model(DeliveryPublic, "POST", f"/webhooks/{webhook_id}/test")

    def webhook_deliveries(self, webhook_id: str, limit: int = 20) -> DeliveriesPublic:
        """GET /webhooks/{id}/deliveries: the newest `limit`."""
        return self._model(
            DeliveriesPublic, "GET", f"/webhooks/{webhook_id}/deliveries", params={"limit": limit}
        )

    # -- runs ------------------------------------------------------------------
    def list_runs(self, **filters: Any) -> RunsPublic:
        """GET /runs with filters (status, algorithm, dataset, tag, owner, sweep_id, where: a
        list of `field=value`, q, limit, offset)."""
        return self._model(RunsPublic, "GET", "/runs", params=filters)

    def get_run(self, run_id: str) -> RunPublic:
        """GET /runs/{id}."""
        return self._model(RunPublic, "GET", f"/runs/{run_id}")

    def submit_run(self, spec: dict[str, Any]) -> RunPublic:
        """POST /runs: queue one run."""
        return self._model(RunPublic, "POST", "/runs", json={"spec": spec})

    def cancel_run(self, run_id: str) -> RunPublic:
        """POST /runs/{id}/cancel (cooperative, between rounds)."""
        return self._model(RunPublic, "POST", f"/runs/{run_id}/cancel")

    def delete_run(self, run_id: str) -> None:
        """DELETE /runs/{id}: to the trash (restorable for FEDGEN_TRASH_DAYS)."""
        self._request("DELETE", f"/runs/{run_id}")

    def trash(self, owner: str | None = None, limit: int = 100) -> TrashPublic:
        """GET /trash: the member's trashed runs and sweeps (an admin's: everyone's, or
        `owner`'s), with deleted_at, deleted_by, purge_after, and trash_days."""
        params: dict[str, Any] = {"limit": limit}
        if owner:
            params["owner"] = owner
        return self._model(TrashPublic, "GET", "/trash", params=params)

    def restore_run(self, run_id: str) -> RunPublic:
        """POST /runs/{id}/restore: the run back out of the trash, as it was."""
        return self._model(RunPublic, "POST", f"/runs/{run_id}/restore")

    def restore_sweep(self, sweep_id: str) -> SweepRestored:
        """POST /sweeps/{id}/restore: the sweep and the runs trashed with it."""
        return self._model(SweepRestored, "POST", f"/sweeps/{sweep_id}/restore")

    def annotate_run(
        self, run_id: str, *, tags: list[str] | None = None, note: str | None = None
    ) -> RunPublic:
        """PATCH /runs/{id}: new tags and/or note (owner or admin)."""
        body = {k: v for k, v in {"tags": tags, "note": note}.items() if v is not None}
        return self._model(RunPublic, "PATCH", f"/runs/{run_id}", json=body)

    def annotate_sweep(
        self, sweep_id: str, *, tags: list[str] | None = None, note: str | None = None
    ) -> SweepPublic:
        """PATCH /sweeps/{id}: new tags and/or note (owner or admin)."""
        body = {k: v for k, v in {"tags": tags, "note": note}.items() if v is not None}
        return self._model(SweepPublic, "PATCH", f"/sweeps/{sweep_id}", json=body)

    def clone_run(self, run_id: str, changes: dict[str, Any] | None = None) -> RunPublic:
        """POST /runs/{id}/clone with dotted-field changes."""
        return self._model(
            RunPublic, "POST", f"/runs/{run_id}/clone", json={"changes": changes or {}}
        )

    def metrics(
        self, run_id: str, since_round: int | None = None, max_points: int | None = None
    ) -> MetricsPublic:
        """GET /runs/{id}/metrics: only rounds after `since_round` when given."""
        params = {"since_round": since_round, "max_points": max_points}
        return self._model(MetricsPublic, "GET", f"/runs/{run_id}/metrics", params=params)

    def users(
        self, run_id: str, round_from: int | None = None, round_to: int | None = None
    ) -> UsersPublic:
        """GET /runs/{id}/users: per-user metrics per round."""
        params = {"round_from": round_from, "round_to": round_to}
        return self._model(UsersPublic, "GET", f"/runs/{run_id}/users", params=params)

    def info(self, run_id: str) -> RunInfoPublic:
        """GET /runs/{id}/info: partition histogram, sizes, device, fidelity."""
        return self._model(RunInfoPublic, "GET", f"/runs/{run_id}/info")

    def stream_token(self, run_id: str) -> StreamToken:
        """POST /runs/{id}/stream-token: a short-lived `?token=` for that run's event stream."""
        return self._model(StreamToken, "POST", f"/runs/{run_id}/stream-token")

    def events(
        self, run_id: str, since_round: int | None = None, wait_s: float = 1.0
    ) -> list[tuple[str, dict[str, Any]]]:
        """The SSE stream's events available now: rounds > `since_round`, then status.

        Reads GET /runs/{id}/events until the server ends the stream (terminal run) or
        nothing new arrives for `wait_s` seconds (or `wait_s` has passed since the first
        byte), so a page can call it on a timer without blocking long. Returns
        (event name, data) pairs in order: ("round", {"round", "metrics"}), ("status", {...}).
        """
        params = {"since_round": since_round if since_round is not None else -1}
        out: list[tuple[str, dict[str, Any]]] = []
        timeout = httpx.Timeout(10.0, read=wait_s)
        try:
            with self._http.stream(
                "GET", f"/runs/{run_id}/events", params=params, timeout=timeout
            ) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    self._raise_for(resp)
                sse.collect(resp.iter_lines(), time.monotonic() + wait_s, out)
        except httpx.ReadTimeout:
            pass  # nothing new within wait_s: what arrived so far is the answer
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise self._unreachable(exc) from exc
        return out

    def compare(
        self,
        run_ids: list[str],
        max_points: int | None = None,
        metrics: list[str] | None = None,
        since_round: int | None = None,
    ) -> dict[str, Any]:
        """GET /compare: several runs with (downsampled) curves; only `metrics` when given, and
        only each run's rounds after `since_round` when given (a live refresh)."""
        params = {
            "run_ids": ",".join(run_ids),
            "since_round": since_round,
            "max_points": max_points,
            "metrics": ",".join(metrics) if metrics else None,
        }
        return self._json("GET", "/compare", params=params)

    def checkpoints(self, run_id: str) -> CheckpointsPublic:
        """GET /runs/{id}/checkpoints."""
        return self._model(CheckpointsPublic, "GET", f"/runs/{run_id}/checkpoints")

    def download_checkpoint(self, run_id: str, ckpt_id: str | int) -> bytes:
        """GET /runs/{id}/checkpoints/{ckpt}/download: the raw bytes."""
        return self._request("GET", f"/runs/{run_id}/checkpoints/{ckpt_id}/download").content

    # -- specs and sweeps --------------------------------------------------------
    def validate_spec(self, spec: dict[str, Any]) -> Validation:
        """POST /spec/validate; a 422 becomes `Validation(ok=False, errors=...)`."""
        try:
            body = self._model(SpecValidated, "POST", "/spec/validate", json={"spec": spec})
        except ApiError as exc:
            if exc.status in (400, 422):
                return Validation(ok=False, errors=error_fields(exc.detail))
            raise
        warned = [w.model_dump() for w in body.warnings]
        return Validation(ok=True, spec=body.spec, warnings=error_fields(warned))

    def spec_schema(self) -> dict[str, Any]:
        """GET /spec/schema (JSON schema of ExperimentSpec)."""
        return self._json("GET", "/spec/schema")

    def spec_defaults(self) -> dict[str, Any]:
        """GET /spec/defaults: the full spec an empty submission gets (the Submit form's start)."""
        return self._model(SpecDefaults, "GET", "/spec/defaults").spec

    def difference(
        self, a: list[str], b: list[str], statistic: str = "final", order: str | None = None
    ) -> Difference:
        """GET /difference: group a − group b with Welch's 95 % CI and p-value; with
        order="better_first" the higher group comes first (the answer says `swapped`)."""
        params = {"a": ",".join(a), "b": ",".join(b), "statistic": statistic, "order": order}
        return self._model(Difference, "GET", "/difference", params=params)

    def create_sweep(
        self, name: str, base: dict[str, Any], grid: dict[str, list[Any]]
    ) -> SweepPublic:
        """POST /sweeps: a base spec times a grid of dotted-field values."""
        return self._model(
            SweepPublic, "POST", "/sweeps", json={"name": name, "base": base, "grid": grid}
        )

    def list_sweeps(self) -> SweepsPublic:
        """GET /sweeps."""
        return self._model(SweepsPublic, "GET", "/sweeps")

    def sweep_summary(self, sweep_id: str) -> SweepSummary:
        """GET /sweeps/{id}/summary: mean ± std of each group's final, best and top-5."""
        return self._model(SweepSummary, "GET", f"/sweeps/{sweep_id}/summary")

    def plot_data(
        self,
        sweep_id: str,
        x: str,
        by: str = "algorithm",
        statistic: str = "top5",
        interval: str = "std",
        target: float | None = None,
        fmt: str = "json",
    ) -> Any:
        """GET /sweeps/{id}/plot-data: a statistic against x, one series per `by` value (or CSV)."""
        params = {
            "x": x,
            "by": by,
            "statistic": statistic,
            "interval": interval,
            "target": target,
            "format": fmt,
        }
        resp = self._request("GET", f"/sweeps/{sweep_id}/plot-data", params=params)
        return resp.text if fmt == "csv" else resp.json()

    def timing(self, sweep_id: str | None = None, algorithm: str | None = None) -> TimingTable:
        """GET /timing: ms per user local update per algorithm (and generator batch size)."""
        return self._model(
            TimingTable, "GET", "/timing", params={"sweep_id": sweep_id, "algorithm": algorithm}
        )

    # -- studies ------------------------------------------------------------------
    def list_studies(self) -> StudiesPublic:
        """GET /studies: every study with runs and estimated CPU time."""
        return self._model(StudiesPublic, "GET", "/studies")

    def get_study(
        self,
        name: str,
        dataset: str | None = None,
        seeds: int | None = None,
        rounds: int | None = None,
    ) -> StudyDefinition:
        """GET /studies/{name}: definition, sweep, the paper's numbers, launched sweeps."""
        params = {"dataset": dataset, "seeds": seeds, "rounds": rounds}
        return self._model(StudyDefinition, "GET", f"/studies/{name}", params=params)

    def launch_study(self, name: str, **overrides: Any) -> StudyLaunched:
        """POST /studies/{name}: create the study's sweep (overrides: dataset, seeds, rounds)."""
        body = {k: v for k, v in overrides.items() if v is not None}
        return self._model(StudyLaunched, "POST", f"/studies/{name}", json=body)

    def study_results(self, name: str, sweep_id: str | None = None) -> StudyResults:
        """GET /studies/{name}/results: the study's table with verdicts for one of its sweeps."""
        return self._model(
            StudyResults, "GET", f"/studies/{name}/results", params={"sweep_id": sweep_id}
        )
