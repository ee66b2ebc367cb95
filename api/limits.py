"""Request limits: 413 for bodies over the limit (a pure ASGI middleware), and rate limits.

Rate limits are token buckets held in memory, so they count per API process: with
several API processes behind a balancer each allows the full rate. Submissions are
counted per user (token). Failed authentications are counted per (client address, first
12 characters of the presented token) at FEDGEN_AUTH_FAIL_RATE, and per address alone at
ADDRESS_FACTOR times that (a guesser cycling tokens); both only ever refuse a token that
failed, never a valid one, so a stranger cannot lock members out. An empty bucket answers
429 with `Retry-After` (seconds) and the usual JSON error body.

Open event streams are counted per API token (StreamSlots, FEDGEN_MAX_STREAMS_PER_TOKEN) and
per member over all their tokens (FEDGEN_MAX_STREAMS_PER_USER), so minting tokens gives no more.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException, status

#: The longest request target (path and query, as sent) uvicorn's HTTP parser, httptools, reads:
#: a longer one is answered 400 "Invalid HTTP request received." before the app sees it. The
#: query limits of each operation keep a valid request under it (tests/api/test_url_limit.py).
MAX_URL_BYTES = (1 << 16) - 1
PERIODS_S = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0}
MAX_KEYS = 10_000  # buckets kept; the least recently used beyond this are forgotten (= full)

Scope = dict[str, Any]
Message = dict[str, Any]


class BodyLimit:
    """Reject bodies larger than `max_bytes` (by Content-Length, or while streaming)."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _reject(self, send: Any) -> None:
        body = json.dumps(
            {"detail": f"request body exceeds the limit of {self.max_bytes} bytes"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.max_bytes
                except ValueError:
                    too_big = True
                if too_big:
                    await self._reject(send)
                    return
        # Chunked bodies: read it all (bounded), then replay it to the app.
        if scope.get("method") not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            chunk = msg.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._reject(send)
                return
            chunks.append(chunk)
            if not msg.get("more_body"):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            msg: Message = await receive()
            return msg

        await self.app(scope, replay, send)


@dataclass(frozen=True)
class Rate:
    """`count` events per `period_s` seconds, refilled continuously."""

    count: int
    period_s: float

    @classmethod
    def parse(cls, text: str) -> Rate:
        """'60/minute' -> Rate(60, 60.0); a ValueError names the expected form."""
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(second|minute|hour|day)\s*", text)
        if not m or int(m.group(1)) < 1:
            raise ValueError(f"rate {text!r}: expected N/second|minute|hour|day with N >= 1")
        return cls(int(m.group(1)), PERIODS_S[m.group(2)])


class RateLimiter:
    """One token bucket per key; thread-safe (handlers run in a thread pool)."""

    def __init__(self, rate: Rate, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, at
        self._lock = threading.Lock()

    def _level(self, key: str, now: float) -> float:
        tokens, at = self._buckets.get(key, (float(self.rate.count), now))
        refill = (now - at) * self.rate.count / self.rate.period_s
        return min(float(self.rate.count), tokens + refill)

    def retry_after(self, key: str) -> int:
        """0 when `key` has a token left, else whole seconds until it has one."""
        with self._lock:
            level = self._level(key, self._clock())
        if level >= 1.0:
            return 0
        return max(1, math.ceil((1.0 - level) * self.rate.period_s / self.rate.count))

    def hit(self, key: str) -> int:
        """Take a token: 0 if there was one, else the seconds to wait (nothing taken)."""
        with self._lock:
            now = self._clock()
            level = self._level(key, now)
            if level < 1.0:
                return max(1, math.ceil((1.0 - level) * self.rate.period_s / self.rate.count))
            self._buckets[key] = (level - 1.0, now)
            self._buckets.move_to_end(key)
            while len(self._buckets) > MAX_KEYS:
                self._buckets.popitem(last=False)
            return 0


def too_many(what: str, retry_after: int) -> HTTPException:
    """The 429 of an empty bucket: JSON {"detail": ...} and Retry-After."""
    return HTTPException(
        status.HTTP_429_TOO_MANY_REQUESTS,
        f"{what}; retry after {retry_after} s",
        {"Retry-After": str(retry_after)},
    )


ADDRESS_FACTOR = 5  # the per-address failure budget, in multiples of FEDGEN_AUTH_FAIL_RATE
PREFIX_CHARS = 12  # of the presented token: "fgl_" and 8 random characters
STREAM_RETRY_S = 5  # the Retry-After of a stream refused for FEDGEN_MAX_STREAMS_PER_*


def failure_key(address: str, presented: str | None) -> str:
    """The bucket a failed authentication counts against: the address and the token's prefix."""
    return f"{address} {(presented or '')[:PREFIX_CHARS] or 'none'}"


class Limits:
    """The API's rate limiters (app.state.limits), built from the settings."""

    def __init__(
        self, submit_rate: str, auth_fail_rate: str, webhook_test_rate: str = "6/minute"
    ) -> None:
        self.submit = RateLimiter(Rate.parse(submit_rate))
        rate = Rate.parse(auth_fail_rate)
        self.auth_fail = RateLimiter(rate)
        self.auth_fail_address = RateLimiter(Rate(rate.count * ADDRESS_FACTOR, rate.period_s))
        self.streams = StreamSlots()
        self.webhook_test = RateLimiter(Rate.parse(webhook_test_rate))

    def check_submit(self, user_key: str) -> None:
        """Count one submission of this user; 429 when over FEDGEN_SUBMIT_RATE."""
        wait = self.submit.hit(user_key)
        if wait:
            raise too_many("too many submissions for this token (FEDGEN_SUBMIT_RATE)", wait)

    def auth_failed(self, address: str, presented: str | None) -> None:
        """Count one failed authentication (a token already found invalid, or none); 429
        instead when this (address, token prefix) or this address has used up its budget.

        Called only after the token failed: a valid token never reaches here, whatever others
        sent from the same address (the dashboard's, behind which every browser sits)."""
        key = failure_key(address, presented)
        wait = max(self.auth_fail.retry_after(key), self.auth_fail_address.retry_after(address))
        if wait:
            raise too_many(
                "too many failed authentications from this address (FEDGEN_AUTH_FAIL_RATE)", wait
            )
        self.auth_fail.hit(key)
        self.auth_fail_address.hit(address)

    def check_webhook_test(self, user_key: str) -> None:
        """Count one webhook test of this member; 429 when over FEDGEN_WEBHOOK_TEST_RATE (each
        test is a POST the lab makes on the member's behalf)."""
        wait = self.webhook_test.hit(user_key)
        if wait:
            raise too_many("too many webhook tests for this token (FEDGEN_WEBHOOK_TEST_RATE)", wait)


class StreamSlot:
    """One open stream's place; `release` gives it back (idempotent: called from the stream's
    end and again from the response's background task, whichever runs)."""

    def __init__(self, slots: StreamSlots, keys: tuple[str, ...]) -> None:
        self._slots = slots
        self._keys = keys
        self._held = True

    def release(self) -> None:
        """Give the place back (once)."""
        if self._held:
            self._held = False
            for key in self._keys:
                self._slots._release(key)


def _streams_full(what: str, n: int, setting: str, limit: int) -> HTTPException:
    return HTTPException(
        status.HTTP_429_TOO_MANY_REQUESTS,
        f"{what} {n} event streams open, the most {setting} ({limit}) allows; close one, retry "
        f"after {STREAM_RETRY_S} s",
        {"Retry-After": str(STREAM_RETRY_S)},
    )


def user_stream_key(user_key: str) -> str:
    """The StreamSlots key that counts a member's streams over all their tokens."""
    return f"user:{user_key}"


class StreamSlots:
    """Event streams open at once, in this process: per API token (FEDGEN_MAX_STREAMS_PER_TOKEN)
    and per member over all their tokens (FEDGEN_MAX_STREAMS_PER_USER)."""

    def __init__(self) -> None:
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def acquire(
        self, key: str, limit: int, user_key: str | None = None, user_limit: int = 0
    ) -> StreamSlot:
        """A place for one more stream of token `key` (and of member `user_key`); 429 when
        `limit` of the token's or `user_limit` of the member's are open."""
        member = None if user_key is None else user_stream_key(user_key)
        keys = (key,) if member is None else (key, member)
        with self._lock:
            n = self._open.get(key, 0)
            if n >= limit:
                raise _streams_full("this token has", n, "FEDGEN_MAX_STREAMS_PER_TOKEN", limit)
            if member is not None:
                mine = self._open.get(member, 0)
                if mine >= user_limit:
                    raise _streams_full(
                        "you have (over all your tokens)",
                        mine,
                        "FEDGEN_MAX_STREAMS_PER_USER",
                        user_limit,
                    )
            for k in keys:
                self._open[k] = self._open.get(k, 0) + 1
        return StreamSlot(self, keys)

    def open_count(self, key: str) -> int:
        """Streams of `key` open now."""
        with self._lock:
            return self._open.get(key, 0)

    def _release(self, key: str) -> None:
        with self._lock:
            n = self._open.get(key, 0) - 1
            if n > 0:
                self._open[key] = n
            else:
                self._open.pop(key, None)
