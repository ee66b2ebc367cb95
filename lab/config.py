"""Settings for the lab server, read from FEDGEN_* environment variables.

Defaults need no server: an SQLite database and a SQLite Celery broker, both
under FEDGEN_HOME (default ~/.fedgen), which also holds the checkpoint files.
Plain `postgresql://` URLs get the psycopg v3 driver.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from vocab.footprint import KeepRule, parse_keep_rule

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=64)
def parse_proxies(text: str) -> tuple[Network, ...]:
    """'10.0.0.0/8, 127.0.0.1' -> networks; a ValueError names the entry that is not one."""
    nets: list[Network] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            nets.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(
                f"FEDGEN_TRUSTED_PROXIES: {part!r} is not an address or a CIDR"
            ) from None
    return tuple(nets)


SEVEN_DAYS_S = 7 * 24 * 3600
RATE_PATTERN = r"^\s*[1-9][0-9]{0,8}\s*/\s*(second|minute|hour|day)\s*$"


def normalize_database_url(url: str) -> str:
    """Pick the psycopg v3 driver for plain `postgresql://` / `postgres://` URLs."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


class Settings(BaseSettings):
    """All configuration of the API, the worker and the `fedgen-lab` CLI."""

    model_config = SettingsConfigDict(
        env_prefix="FEDGEN_", extra="ignore", use_attribute_docstrings=True
    )

    home: Path = Field(default_factory=lambda: Path.home() / ".fedgen")
    database_url: str = ""
    broker_url: str = ""
    checkpoint_dir: Path | None = None
    visibility_timeout_s: int = Field(SEVEN_DAYS_S, ge=60)
    lease_s: float = Field(120.0, gt=0)
    """A running run whose lease expired may be re-claimed."""
    heartbeat_s: float = Field(20.0, gt=0)
    """How often a worker renews its lease."""
    queue_prefix: str = Field("", max_length=50)
    """Prefix of the queue names (gpu/cpu)."""
    reaper_s: float = Field(5.0, gt=0)
    """How often a worker runs a dispatch pass (sends queued runs to free slots, re-sends lost
    messages and runs with expired leases) and renews its `workers` row."""
    dispatch_timeout_s: float = Field(30.0, gt=0)
    """A sent run not claimed within this is re-sent if its message is missing; each further
    re-send waits twice as long, up to dispatch_backoff_max_s."""
    dispatch_backoff_max_s: float = Field(300.0, gt=0)
    """The longest wait between two sends of one unclaimed run."""
    db_retry_budget_s: float = Field(600.0, gt=0)
    """How long a worker's task keeps retrying while the database is unreachable."""
    db_retry_max_delay_s: float = Field(15.0, gt=0)
    """Longest back-off between those retries (1, 2, 4, ... s up to it)."""
    keep_full_checkpoints: int = Field(2, ge=1, le=1000)
    """Full (resume) checkpoints kept per run, the newest; older ones are removed when a newer
    one commits. Final-model checkpoints are all kept; generator ones as
    keep_generator_checkpoints says."""
    keep_generator_checkpoints: str = Field("every:50,last:5", min_length=1, max_length=100)
    """Which generator checkpoints of a FedGen run are kept (default 'every:50,last:5'):
    `every:N` those at rounds that are multiples of N (1 to 10000), `last:K` the newest K (0 to
    10000), comma-separated, or `all`. The final round's is always kept; the others go when a
    newer one commits, and GET /runs/{id}/checkpoints lists what was pruned and why."""
    max_checkpoint_bytes: int = Field(1 << 30, ge=1 << 20)
    """A spec whose estimated full checkpoint is larger is refused at submission."""
    quota_bytes: int = Field(50 << 30, ge=0, le=1 << 60)
    """What each member's runs may store together (checkpoints and rounds; trashed runs count
    until purged); `fedgen-lab quota set USER BYTES` overrides it per member. A submission whose
    estimated footprint would put its owner over it is refused (422)."""
    max_queued_runs_per_member: int = Field(5000, ge=1, le=1_000_000)
    """A member's runs queued at once; a submission that would go past it is refused (429)."""
    storage_retries: int = Field(6, ge=0, le=100)
    """How many times a run whose checkpoint could not be written (a full disk) resumes from its
    last good checkpoint before it fails."""
    storage_retry_delay_s: float = Field(5.0, gt=0, le=3600)
    """The first wait before such a resume; each further one waits twice as long, at most 120 s."""
    sse_max_s: float = Field(3600.0, gt=0)
    """The longest a GET /runs/{id}/events stream stays open: one of a run not yet terminal ends
    after this long, without a terminal `status` event; the client reconnects (EventSource
    does, with Last-Event-ID) and resumes after the last round it got."""
    max_body_bytes: int = Field(1024 * 1024, ge=1024)
    max_page_size: int = Field(500, ge=1)
    max_compare_runs: int = Field(500, ge=1)
    auto_upgrade: bool = True
    """Run `alembic upgrade head` when the API starts."""
    cors_origins: list[str] = Field(default_factory=lambda: ["*"])
    submit_rate: str = Field("60/minute", pattern=RATE_PATTERN)
    """Submissions (POST /runs, /sweeps, /runs/{id}/clone, /studies/{name}) per token, as
    N/second|minute|hour|day; a token bucket per API process."""
    auth_fail_rate: str = Field("20/minute", pattern=RATE_PATTERN)
    """Failed authentications per (client address, presented token's prefix) before 429 (per
    API process); a valid token is never refused because of other requests' failures."""
    trusted_proxies: str = Field("", max_length=4000)
    """Comma-separated CIDRs or addresses of proxies (e.g. the dashboard's container,
    `172.18.0.0/16`) whose `X-Forwarded-For` names the real client; empty: the socket's peer is
    the client."""
    token_max_days: int | None = Field(None, ge=1, le=36500)
    """The longest lifetime a new API token may have, in days; None: tokens may never expire."""
    trash_days: float = Field(7.0, ge=0, le=3650)
    """How long a deleted run or sweep stays in the trash, restorable, before it is purged."""
    max_streams_per_token: int = Field(8, ge=1, le=1000)
    """Event streams (GET /runs/{id}/events) open at once per API token (per API process)."""
    max_streams_per_user: int = Field(16, ge=1, le=10000)
    """Event streams open at once per member, over all their tokens and stream tokens (per API
    process): minting more tokens gives no more streams."""
    max_tokens_per_user: int = Field(20, ge=1, le=10000)
    """A member's API tokens that still authenticate (neither revoked nor expired); POST
    /tokens past it is refused (422) until one is revoked. `fedgen-lab` (an admin on the
    server) is not limited by it."""
    max_submission_cpu_s: float = Field(250_000.0, gt=0, le=1e12)
    """The estimated CPU seconds (one core; fedgen/studies/costs.py) one submission (a run, a
    sweep, a study) may ask for; more is refused (422 stating the estimate and the limit)."""
    max_member_cpu_s: float = Field(1_000_000.0, gt=0, le=1e12)
    """The estimated CPU seconds a member's queued and running runs (a running one counted
    whole) and a new submission may come to together; more is refused (422 stating both
    estimates and the limit), so the per-submission cap cannot be stepped around by
    submitting in parts."""
    webhook_test_rate: str = Field("6/minute", pattern=RATE_PATTERN)
    """POST /webhooks/{id}/test per token, as N/second|minute|hour|day."""
    max_run_hours: float = Field(72.0, gt=0, le=24 * 3650)
    """A run that has been running (over all its segments) longer than this fails, saying so;
    time spent queued between two segments does not count. Checked by the worker between
    rounds and by the dispatcher's pass (a run stuck in a round, or whose worker is gone)."""
    max_attempts: int = Field(5, ge=1, le=1000)
    """A run whose worker died holding it (lease expired or holder gone, never handed back)
    this many times in a row fails with that reason instead of being claimed again. "In a row":
    the count restarts once the run stores a new round, so a run that progresses between
    worker restarts is never failed by it; hand-backs (dataset, out of memory, a database
    outage) and storage retries are not deaths (lab.repository.run_limits)."""
    data_roots: str = Field("", max_length=4000)
    """Comma-separated folders data may be read from (`data.root` and `data.folder.path` must
    resolve inside one); empty: FEDGEN_DATA (else ~/.fedgen/data) and Debian's dataset folder
    (/usr/share/datasets)."""
    public_url: str = Field("", max_length=500, pattern=r"^(https?://[^\s?#]+)?$")
    """The lab's address as members reach it (e.g. `https://lab.example`): makes webhook and
    printed links absolute; empty: links stay relative."""
    # Webhooks (api/routes/webhooks.py, worker/webhook_sender.py). Empty allow list: no
    # webhook can be registered or sent, so a fresh lab never POSTs to hosts nobody vetted.
    webhook_allow: str = Field("", max_length=4000)
    """Comma-separated webhook targets: host-name patterns (`hooks.slack.com`, `*.lab.example`,
    `*` any name) and addresses or CIDRs (`127.0.0.1`, `10.0.0.0/8`, `::1`). A pattern lets a
    name through only: every address it resolves to must be public or inside an address entry
    (loopback, private, link-local, CGNAT, multicast, reserved and unspecified ones are refused
    otherwise, even under `*`); see lab/webhook_targets.py. Empty: none. Checked at registration
    and again before each send, which connects to the address it checked."""
    webhook_retries: int = Field(8, ge=1, le=50)
    """Attempts of one delivery before it is marked failed."""
    webhook_backoff_s: float = Field(2.0, gt=0, le=3600)
    """Wait after a delivery's first failed attempt; doubles per attempt, at most
    webhook_backoff_max_s."""
    webhook_backoff_max_s: float = Field(300.0, gt=0, le=86400)
    webhook_timeout_s: float = Field(5.0, gt=0, le=60)
    """Connect and read timeout of one delivery POST."""
    webhook_poll_s: float = Field(2.0, gt=0, le=3600)
    """How often each worker's sender looks for due deliveries."""

    @model_validator(mode="after")
    def _fill_defaults(self) -> Settings:
        self.home = self.home.expanduser()
        if not self.database_url:
            self.database_url = f"sqlite:///{self.home / 'lab.db'}"
        self.database_url = normalize_database_url(self.database_url)
        if not self.broker_url:
            self.broker_url = f"sqla+sqlite:///{self.home / 'broker.db'}"
        if self.checkpoint_dir is None:
            self.checkpoint_dir = self.home / "checkpoints"
        parse_proxies(self.trusted_proxies)  # a wrong entry stops the start, naming it
        self.generator_keep_rule  # likewise a wrong retention rule  # noqa: B018
        return self

    @property
    def generator_keep_rule(self) -> KeepRule:
        """keep_generator_checkpoints parsed; a ValueError names the setting and the part."""
        try:
            return parse_keep_rule(self.keep_generator_checkpoints)
        except ValueError as exc:
            raise ValueError(f"FEDGEN_KEEP_GENERATOR_CHECKPOINTS: {exc}") from None

    @property
    def worker_ttl_s(self) -> float:
        """A worker whose row was not renewed for this long counts as gone (3 missed passes)."""
        return 3 * self.reaper_s + 5

    @property
    def checkpoint_root(self) -> Path:
        """Where checkpoint files live (always set after validation)."""
        assert self.checkpoint_dir is not None
        return self.checkpoint_dir.expanduser()

    def ensure_dirs(self) -> None:
        """Create FEDGEN_HOME and the checkpoint folder."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.checkpoint_root.mkdir(parents=True, exist_ok=True)


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings (a FastAPI dependency; tests override it)."""
    return Settings()
