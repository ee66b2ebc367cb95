"""API tokens: random, shown once, stored only as a sha256 hash."""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "fgl_"


def new_token() -> str:
    """A fresh bearer token (about 256 bits of randomness)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The stored form of a token; sha256 suffices for high-entropy random tokens."""
    return hashlib.sha256(token.encode()).hexdigest()
