"""The lab's REST API one method per endpoint: `LabApi` sends the request through `Http` and
returns the endpoint's own response model (vocab.schemas, declared once for the server, the
dashboard and this client). It is the low level both `Lab` (the notebook objects) and the
dashboard are built on: one client of the API, not one per caller."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from fedgen_lab.errors import LabError, error_fields
from fedgen_lab.http import MAX_RETRIES, Http, settings_from_env
from vocab.schemas.analysis import Difference, TimingTable
from vocab.schemas.checkpoints import CheckpointsPublic
from vocab.schemas.push import RunPushed
from vocab.schemas.results import ComparePublic, MetricsPublic, PlotData, UsersPublic
from vocab.schemas.runs import RunInfoPublic, RunPublic, RunsPublic, StreamToken
from vocab.schemas.spec import SpecDefaults, SpecValidated
from vocab.schemas.studies import StudiesPublic, StudyDefinition, StudyLaunched, StudyResults
from vocab.schemas.sweeps import SweepPublic, SweepsPublic, SweepSummary
from vocab.schemas.tokens import TokenCreated, TokenPublic, TokensPublic
from vocab.schemas.trash import SweepRestored, TrashPublic
from vocab.schemas.usage import UsageList
from vocab.schemas.users import Health, UserPublic
from vocab.schemas.webhooks import DeliveriesPublic, DeliveryPublic, WebhookPublic, WebhooksPublic
from vocab.schemas.workers import WorkersPublic

Event = tuple[str, dict[str, Any]]  # (event name, data) of a run's event stream


@dataclass(frozen=True)
class Validation:
    """The outcome of POST /spec/validate: the normalised spec or field -> message errors, and
    field -> message warnings of a valid spec (e.g. a folder the server's host cannot see)."""

    ok: bool
    spec: dict[str, Any] | None = None
    errors: dict[str, str] = field(default_factory=dict)
    warnings: dict[str, str] = field(default_factory=dict)


def _tagged(tags: list[str] | None, note: str | None) -> dict[str, Any]:
    """A PATCH body of the given tags and note only."""
    return {k: v for k, v in {"tags": tags, "note": note}.items() if v is not None}


def _plot_params(
    x: str, by: str, statistic: str, interval: str, target: float | None, fmt: str
) -> dict[str, Any]:
    """The query of GET /sweeps/{id}/plot-data."""
    return {
        "x": x,
        "by": by,
        "statistic": statistic,
        "interval": interval,
        "target": target,
        "format": fmt,
    }


class LabApi:
    """Typed calls of the /api/v1 endpoints on one `Http` (cheap to create)."""

    def __init__(self, http: Http) -> None:
        self.http = http

    @property
    def base_url(self) -> str:
        """The server's /api/v1 address."""
        return self.http.base_url

    def close(self) -> None:
        """Release the connection pool."""
        self.http.close()

    def __enter__(self) -> LabApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- service ---------------------------------------------------------------
    def health(self) -> Health:
        """GET /health."""
        return self.http.model(Health, "GET", "/health")

    def me(self) -> UserPublic:
        """GET /me: who the token belongs to."""
        return self.http.model(UserPublic, "GET", "/me")

    def workers(self) -> WorkersPublic:
        """GET /workers: the live workers (host, slots, devices, datasets, runs held), slot totals."""
        return self.http.model(WorkersPublic, "GET", "/workers")

    def usage(self) -> UsageList:
        """GET /usage: what members' runs store against their quotas (an admin: every member)."""
        return self.http.model(UsageList, "GET", "/usage")

    # -- tokens ----------------------------------------------------------------
    def list_tokens(self) -> TokensPublic:
        """GET /tokens: yours, newest first (name, created, last used, expires, revoked)."""
        return self.http.model(TokensPublic, "GET", "/tokens")

    def create_token(self, name: str, expires_days: int | None = None) -> TokenCreated:
        """POST /tokens: the new token; its secret (`token`) is in this answer only."""
        body = {"name": name, **({"expires_days": expires_days} if expires_days else {})}
        return self.http.model(TokenCreated, "POST", "/tokens", json=body)

    def revoke_token(self, token_id: str) -> TokenPublic:
        """DELETE /tokens/{id}: the token, revoked (401 from its next request on)."""
        return self.http.model(TokenPublic, "DELETE", f"/tokens/{token_id}")

    # -- webhooks --------------------------------------------------------------
    def list_webhooks(self, limit: int = 100) -> WebhooksPublic:
        """GET /webhooks: yours (an admin's list has everyone's)."""
        return self.http.model(WebhooksPublic, "GET", "/webhooks", params={"limit": limit})

    def create_webhook(
        self, url: str, events: list[str], secret: str | None = None
    ) -> WebhookPublic:
        """POST /webhooks: the new webhook, with its signing secret."""
        body: dict[str, Any] = {"url": url, "events": events}
        if secret:
            body["secret"] = secret
        return self.http.model(WebhookPublic, "POST", "/webhooks", json=body)

    def delete_webhook(self, webhook_id: str) -> None:
        """DELETE /webhooks/{id} (its deliveries go with it)."""
        self.http.request("DELETE", f"/webhooks/{webhook_id}")

    def test_webhook(self, webhook_id: str) -> DeliveryPublic:
        """POST /webhooks/{id}/test: the queued `test` delivery."""
        return self.http.model(DeliveryPublic, "POST", f"/webhooks/{webhook_id}/test")

    def webhook_deliveries(self, webhook_id: str, limit: int = 20) -> DeliveriesPublic:
        """GET /webhooks/{id}/deliveries: the newest `limit`."""
        path = f"/webhooks/{webhook_id}/deliveries"
        return self.http.model(DeliveriesPublic, "GET", path, params={"limit": limit})

    # -- runs ------------------------------------------------------------------
    def list_runs(self, **filters: Any) -> RunsPublic:
        """GET /runs with filters (status, algorithm, dataset, tag, owner, sweep_id, where: a
        list of `field=value`, q, limit, offset, cursor)."""
        return self.http.model(RunsPublic, "GET", "/runs", params=filters)

    def get_run(self, run_id: str) -> RunPublic:
        """GET /runs/{id}."""
        return self.http.model(RunPublic, "GET", f"/runs/{run_id}")

    def submit_run(self, spec: dict[str, Any]) -> RunPublic:
        """POST /runs: queue one run."""
        return self.http.model(RunPublic, "POST", "/runs", json={"spec": spec})

    def push_run(self, body: dict[str, Any]) -> RunPushed:
        """POST /runs/push: a local run folder's body (`fedgen_lab.rundir.push_body`) as a run."""
        return self.http.model(RunPushed, "POST", "/runs/push", json=body)

    def cancel_run(self, run_id: str) -> RunPublic:
        """POST /runs/{id}/cancel (cooperative, between rounds)."""
        return self.http.model(RunPublic, "POST", f"/runs/{run_id}/cancel")

    def delete_run(self, run_id: str) -> None:
        """DELETE /runs/{id}: to the trash (restorable for FEDGEN_TRASH_DAYS)."""
        self.http.request("DELETE", f"/runs/{run_id}")

    def restore_run(self, run_id: str) -> RunPublic:
        """POST /runs/{id}/restore: the run back out of the trash, as it was."""
        return self.http.model(RunPublic, "POST", f"/runs/{run_id}/restore")

    def annotate_run(
        self, run_id: str, *, tags: list[str] | None = None, note: str | None = None
    ) -> RunPublic:
        """PATCH /runs/{id}: new tags and/or note (owner or admin)."""
        return self.http.model(RunPublic, "PATCH", f"/runs/{run_id}", json=_tagged(tags, note))

    def clone_run(self, run_id: str, changes: dict[str, Any] | None = None) -> RunPublic:
        """POST /runs/{id}/clone with dotted-field changes."""
        body = {"changes": changes or {}}
        return self.http.model(RunPublic, "POST", f"/runs/{run_id}/clone", json=body)

    def metrics(
        self, run_id: str, since_round: int | None = None, max_points: int | None = None
    ) -> MetricsPublic:
        """GET /runs/{id}/metrics: only rounds after `since_round` when given; max_points=0:
        every round."""
        params = {"since_round": since_round, "max_points": max_points}
        return self.http.model(MetricsPublic, "GET", f"/runs/{run_id}/metrics", params=params)

    def users(
        self, run_id: str, round_from: int | None = None, round_to: int | None = None
    ) -> UsersPublic:
        """GET /runs/{id}/users: per-user metrics per round."""
        params = {"round_from": round_from, "round_to": round_to}
        return self.http.model(UsersPublic, "GET", f"/runs/{run_id}/users", params=params)

    def info(self, run_id: str) -> RunInfoPublic:
        """GET /runs/{id}/info: partition histogram, sizes, device, fidelity, data files."""
        return self.http.model(RunInfoPublic, "GET", f"/runs/{run_id}/info")

    def stream_token(self, run_id: str) -> StreamToken:
        """POST /runs/{id}/stream-token: a short-lived `?token=` for that run's event stream."""
        return self.http.model(StreamToken, "POST", f"/runs/{run_id}/stream-token")

    def events(
        self,
        run_id: str,
        since_round: int | None = None,
        *,
        read_timeout: float | None = None,
        until: float | None = None,
    ) -> Iterator[Event]:
        """GET /runs/{id}/events as (event name, data) pairs: ("round", {"round", "metrics"})
        for each round after `since_round`, then ("status", {...}); until the server ends the
        stream (a run that ended), nothing arrives for `read_timeout` seconds, or the first
        event boundary past `until` (time.monotonic)."""
        params = {"since_round": since_round if since_round is not None else -1}
        return self.http.events(f"/runs/{run_id}/events", params, read_timeout, until)

    def events_now(
        self, run_id: str, since_round: int | None = None, wait_s: float = 1.0
    ) -> list[Event]:
        """The events available now: the stream read until it ends, nothing new arrives for
        `wait_s` seconds or `wait_s` has passed since it opened, so a page can call it on a
        timer without blocking long."""
        until = time.monotonic() + wait_s
        return list(self.events(run_id, since_round, read_timeout=wait_s, until=until))

    def checkpoints(self, run_id: str) -> CheckpointsPublic:
        """GET /runs/{id}/checkpoints."""
        return self.http.model(CheckpointsPublic, "GET", f"/runs/{run_id}/checkpoints")

    def download_checkpoint(self, run_id: str, ckpt_id: str | int) -> bytes:
        """GET /runs/{id}/checkpoints/{ckpt}/download: the raw bytes."""
        return self.http.request("GET", f"/runs/{run_id}/checkpoints/{ckpt_id}/download").content

    def trash(self, owner: str | None = None, limit: int = 100) -> TrashPublic:
        """GET /trash: the member's trashed runs and sweeps (an admin's: everyone's, or
        `owner`'s), with deleted_at, deleted_by, purge_after, and trash_days."""
        params = {"limit": limit, "owner": owner}
        return self.http.model(TrashPublic, "GET", "/trash", params=params)

    # -- comparing ---------------------------------------------------------------
    def compare(
        self,
        run_ids: list[str],
        max_points: int | None = None,
        metrics: list[str] | None = None,
        since_round: int | None = None,
    ) -> ComparePublic:
        """GET /compare: several runs with (downsampled; max_points=0: whole) curves; only
        `metrics` when given, and only each run's rounds after `since_round` when given."""
        params = {
            "run_ids": ",".join(run_ids),
            "since_round": since_round,
            "max_points": max_points,
            "metrics": ",".join(metrics) if metrics else None,
        }
        return self.http.model(ComparePublic, "GET", "/compare", params=params)

    def difference(
        self, a: list[str], b: list[str], statistic: str = "final", order: str | None = None
    ) -> Difference:
        """GET /difference: group a − group b with Welch's 95 % CI and p-value; with
        order="better_first" the higher group comes first (the answer says `swapped`)."""
        params = {"a": ",".join(a), "b": ",".join(b), "statistic": statistic, "order": order}
        return self.http.model(Difference, "GET", "/difference", params=params)

    def timing(self, sweep_id: str | None = None, algorithm: str | None = None) -> TimingTable:
        """GET /timing: ms per user local update per algorithm (and generator batch size)."""
        params = {"sweep_id": sweep_id, "algorithm": algorithm}
        return self.http.model(TimingTable, "GET", "/timing", params=params)

    # -- specs -------------------------------------------------------------------
    def validate_spec(self, spec: dict[str, Any]) -> Validation:
        """POST /spec/validate; a 400/422 becomes `Validation(ok=False, errors=...)`."""
        try:
            body = self.http.model(SpecValidated, "POST", "/spec/validate", json={"spec": spec})
        except LabError as exc:
            if exc.status in (400, 422):
                return Validation(ok=False, errors=exc.fields)
            raise
        warned = [w.model_dump() for w in body.warnings]
        return Validation(ok=True, spec=body.spec, warnings=error_fields(warned))

    def spec_schema(self) -> dict[str, Any]:
        """GET /spec/schema: the JSON schema of ExperimentSpec (plugins included)."""
        schema = self.http.json("GET", "/spec/schema")
        if not isinstance(schema, dict):
            raise LabError("The lab server's /spec/schema is not a JSON schema object.")
        return schema

    def spec_defaults(self) -> dict[str, Any]:
        """GET /spec/defaults: the full spec an empty submission gets (the Submit form's start)."""
        return self.http.model(SpecDefaults, "GET", "/spec/defaults").spec

    # -- sweeps --------------------------------------------------------------------
    def create_sweep(
        self, name: str, base: dict[str, Any], grid: dict[str, list[Any]]
    ) -> SweepPublic:
        """POST /sweeps: a base spec times a grid of dotted-field values."""
        body = {"name": name, "base": base, "grid": grid}
        return self.http.model(SweepPublic, "POST", "/sweeps", json=body)

    def list_sweeps(self) -> SweepsPublic:
        """GET /sweeps."""
        return self.http.model(SweepsPublic, "GET", "/sweeps")

    def get_sweep(self, sweep_id: str) -> SweepPublic:
        """GET /sweeps/{id}."""
        return self.http.model(SweepPublic, "GET", f"/sweeps/{sweep_id}")

    def delete_sweep(self, sweep_id: str) -> None:
        """DELETE /sweeps/{id}: the sweep and its runs to the trash (restorable)."""
        self.http.request("DELETE", f"/sweeps/{sweep_id}")

    def restore_sweep(self, sweep_id: str) -> SweepRestored:
        """POST /sweeps/{id}/restore: the sweep and the runs trashed with it."""
        return self.http.model(SweepRestored, "POST", f"/sweeps/{sweep_id}/restore")

    def annotate_sweep(
        self, sweep_id: str, *, tags: list[str] | None = None, note: str | None = None
    ) -> SweepPublic:
        """PATCH /sweeps/{id}: new tags and/or note (owner or admin)."""
        path = f"/sweeps/{sweep_id}"
        return self.http.model(SweepPublic, "PATCH", path, json=_tagged(tags, note))

    def sweep_summary(
        self,
        sweep_id: str,
        group_by: str | None = None,
        *,
        statistic: str | None = None,
        tune: str | None = None,
    ) -> SweepSummary:
        """GET /sweeps/{id}/summary: mean ± std of each group's final, best, top-5 and
        val_best, and its cost (groups: every field but the seed, or the comma-separated dotted
        fields of `group_by`); `tune` (comma-separated swept fields) chooses their values per
        group of the others by the validation counterpart of `statistic` (default val_best)."""
        path = f"/sweeps/{sweep_id}/summary"
        params = {"group_by": group_by, "statistic": statistic, "tune": tune}
        return self.http.model(SweepSummary, "GET", path, params=params)

    def plot_data(
        self,
        sweep_id: str,
        x: str,
        by: str = "algorithm",
        statistic: str = "top5",
        interval: str = "std",
        target: float | None = None,
    ) -> PlotData:
        """GET /sweeps/{id}/plot-data: a statistic against x, one series per `by` value."""
        params = _plot_params(x, by, statistic, interval, target, "json")
        return self.http.model(PlotData, "GET", f"/sweeps/{sweep_id}/plot-data", params=params)

    def plot_csv(
        self,
        sweep_id: str,
        x: str,
        by: str = "algorithm",
        statistic: str = "top5",
        interval: str = "std",
        target: float | None = None,
    ) -> str:
        """GET /sweeps/{id}/plot-data?format=csv: the same points as a CSV file's text."""
        params = _plot_params(x, by, statistic, interval, target, "csv")
        return self.http.request("GET", f"/sweeps/{sweep_id}/plot-data", params=params).text

    # -- studies ------------------------------------------------------------------
    def list_studies(self) -> StudiesPublic:
        """GET /studies: every study with runs and estimated CPU time."""
        return self.http.model(StudiesPublic, "GET", "/studies")

    def get_study(
        self,
        name: str,
        dataset: str | None = None,
        seeds: int | None = None,
        rounds: int | None = None,
    ) -> StudyDefinition:
        """GET /studies/{name}: definition, sweep, the paper's numbers, launched sweeps."""
        params = {"dataset": dataset, "seeds": seeds, "rounds": rounds}
        return self.http.model(StudyDefinition, "GET", f"/studies/{name}", params=params)

    def launch_study(self, name: str, **overrides: Any) -> StudyLaunched:
        """POST /studies/{name}: create the study's sweep (overrides: dataset, seeds, rounds)."""
        body = {k: v for k, v in overrides.items() if v is not None}
        return self.http.model(StudyLaunched, "POST", f"/studies/{name}", json=body)

    def study_results(self, name: str, sweep_id: str | None = None) -> StudyResults:
        """GET /studies/{name}/results: the study's table with verdicts for one of its sweeps."""
        path = f"/studies/{name}/results"
        return self.http.model(StudyResults, "GET", path, params={"sweep_id": sweep_id})


def open_api(
    url: str | None = None,
    token: str | None = None,
    *,
    timeout: float = 30.0,
    transport: httpx.BaseTransport | None = None,
    headers: dict[str, str] | None = None,
    max_retries: int = MAX_RETRIES,
    sleep: Callable[[float], None] = time.sleep,
) -> LabApi:
    """A `LabApi` on the lab at `url` with `token` (else FEDGEN_API_URL / FEDGEN_TOKEN)."""
    env_url, env_token = settings_from_env()
    http = Http(
        url or env_url,
        token if token is not None else env_token,
        timeout=timeout,
        transport=transport,
        headers=headers,
        max_retries=max_retries,
        sleep=sleep,
    )
    return LabApi(http)
