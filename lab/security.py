"""API tokens (random, shown once, stored only as a sha256 hash) and short-lived stream tokens.

A stream token lets a browser's EventSource, which cannot set an Authorization header, read
the event stream of one run for a few minutes (`?token=` on GET /runs/{id}/events). It is
`fgs_<api token id>.<run id>.<expiry unix s>.<signature>`, the signature an HMAC-SHA256 of
the first three parts keyed with the stored hash of the API token that asked for it. So it
needs no extra server secret, dies with that API token (a revoked or expired API token's
stream tokens are refused, and open streams of either end), and whoever can read the hash from
the database could forge one only to read run data that the database already shows them.

An API token's lifetime: `lifetime_days` applies FEDGEN_TOKEN_MAX_DAYS to what is asked.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
import uuid
from dataclasses import dataclass

TOKEN_PREFIX = "fgl_"
STREAM_PREFIX = "fgs_"
STREAM_TOKEN_TTL_S = 10 * 60


class LifetimeTooLong(ValueError):
    """A token asked to live longer than FEDGEN_TOKEN_MAX_DAYS allows (the message says so)."""


def lifetime_days(requested: int | None, max_days: int | None) -> int | None:
    """The days a new token lives: as asked, the cap when none is asked, None for never.

    Raises LifetimeTooLong when `requested` exceeds `max_days`.
    """
    if requested is not None and requested < 1:
        raise LifetimeTooLong(f"{requested} is not a number of days >= 1")
    if max_days is None:
        return requested
    if requested is None:
        return max_days
    if requested > max_days:
        raise LifetimeTooLong(
            f"{requested} days exceeds the limit FEDGEN_TOKEN_MAX_DAYS={max_days} days"
        )
    return requested


def new_token() -> str:
    """A fresh bearer token (about 256 bits of randomness)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The stored form of a token; sha256 suffices for high-entropy random tokens."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class StreamClaim:
    """What a stream token says before its signature is checked."""

    token_id: uuid.UUID
    run_id: uuid.UUID
    expires: int
    body: str
    signature: str


def _sign(key_hex: str, body: str) -> str:
    mac = hmac.new(bytes.fromhex(key_hex), body.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def new_stream_token(
    token_id: uuid.UUID, token_hash: str, run_id: uuid.UUID, ttl_s: int = STREAM_TOKEN_TTL_S
) -> tuple[str, int]:
    """A stream token for one run, signed with the caller's API token hash; (token, expiry)."""
    expires = int(time.time()) + ttl_s
    body = f"{token_id.hex}.{run_id.hex}.{expires}"
    return f"{STREAM_PREFIX}{body}.{_sign(token_hash, body)}", expires


def parse_stream_token(token: str) -> StreamClaim | None:
    """The claim inside a stream token, or None when it is not shaped like one."""
    if not token.startswith(STREAM_PREFIX) or len(token) > 200:
        return None
    parts = token[len(STREAM_PREFIX) :].split(".")
    if len(parts) != 4 or not parts[2].isdigit() or len(parts[2]) > 12:
        return None
    try:
        token_id, run_id = uuid.UUID(hex=parts[0]), uuid.UUID(hex=parts[1])
    except ValueError:
        return None
    return StreamClaim(token_id, run_id, int(parts[2]), ".".join(parts[:3]), parts[3])


def stream_token_valid(claim: StreamClaim, token_hash: str) -> bool:
    """True when the signature matches `token_hash` and the token has not expired."""
    if claim.expires < time.time():
        return False
    return hmac.compare_digest(_sign(token_hash, claim.body), claim.signature)
