"""Webhooks' request and response bodies and their limits; the URL's form is checked here, its
target (FEDGEN_WEBHOOK_ALLOW, names and addresses) in lab/webhook_targets.py."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from vocab.schemas.base import IdStr
from vocab.webhook_events import EVENTS, WebhookEvent

MAX_URL_CHARS = 2000  # the column's length

MIN_SECRET_CHARS, MAX_SECRET_CHARS = 16, 128

MAX_WEBHOOKS_PER_USER = 20  # each one multiplies the deliveries of every run's end

# http(s), a host name or IPv4 (ASCII: an IDN host in punycode) or a bracketed IPv6 address,
# an optional port, then anything without spaces; url_problem checks the rest (port range).
URL_PATTERN = r"^https?://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?([/?#][^\s]*)?$"


def url_problem(url: str) -> str | None:
    """Why `url` cannot be a webhook target (scheme, host, port), or None."""
    if not url.startswith(("http://", "https://")):
        return "must be an http:// or https:// URL"
    if not re.fullmatch(URL_PATTERN, url):
        return (
            "must be http(s)://host[:port][/path] with an ASCII host name or address (an "
            "international name in punycode, IPv6 in brackets) and no spaces"
        )
    try:
        urlsplit(url).port  # noqa: B018 - raises on a port out of range
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    return None


class WebhookCreate(BaseModel):
    """POST /webhooks: where to POST which events; `secret` signs them (generated if absent)."""

    model_config = ConfigDict(extra="forbid")
    url: str = Field(
        min_length=1,
        max_length=MAX_URL_CHARS,
        json_schema_extra={"pattern": URL_PATTERN},  # checked by _http_url, with a clear message
        description="http(s) URL whose host FEDGEN_WEBHOOK_ALLOW allows (by name) and whose "
        "addresses are public or allowed by address, e.g. a Slack incoming webhook (the body has "
        "a Slack-compatible `text`)",
    )
    events: list[WebhookEvent] = Field(
        min_length=1, max_length=len(EVENTS), description="At least one; repeats count once"
    )
    secret: str | None = Field(
        None,
        min_length=MIN_SECRET_CHARS,
        max_length=MAX_SECRET_CHARS,
        pattern=r"^[!-~]+$",
        description="HMAC-SHA256 key of X-FedGen-Signature (printable ASCII, no spaces); "
        "a random one is generated when absent",
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        problem = url_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("events")
    @classmethod
    def _once_each(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


class WebhookPublic(BaseModel):
    """A webhook; its secret is shown to its owner (and admins) to check signatures with."""

    model_config = ConfigDict(from_attributes=True)
    id: IdStr
    owner: str
    url: str
    events: list[str]
    secret: str
    active: bool
    created_at: datetime


class WebhooksPublic(BaseModel):
    """A page of webhooks."""

    data: list[WebhookPublic]
    count: int


class DeliveryPublic(BaseModel):
    """One event for one webhook: pending (next_attempt_at), delivered or failed, with the last
    attempt's HTTP status or error."""

    model_config = ConfigDict(from_attributes=True)
    id: IdStr
    webhook_id: IdStr
    event: str
    subject: str
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None
    payload: dict[str, Any]


class DeliveriesPublic(BaseModel):
    """A page of deliveries, newest first."""

    data: list[DeliveryPublic]
    count: int
