"""The contract's NUL probe changes a body string only where the body is sent as JSON."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import scripts.contract_hooks as hooks


def _probed(headers: dict[str, str] | None, query: dict[str, str] | None = None) -> int:
    """How many of 2 * UNSTORABLE_EVERY PATCH cases with a string get a changed body or query."""
    op = SimpleNamespace(method="PATCH")
    changed = 0
    for _ in range(hooks.UNSTORABLE_EVERY * 2):
        case = SimpleNamespace(
            method="PATCH",
            operation=op,
            formatted_path="/runs/1",
            media_type="application/json",
            body={"note": "x", "tags": []},
            query=dict(query) if query else None,
            headers=headers,
        )
        kwargs: dict[str, Any] = {}
        hooks.before_call(None, case, kwargs)  # type: ignore[arg-type]
        changed += "data" in kwargs or (case.query or {}) != (query or {})
    return changed


def test_a_json_body_is_probed_every_nth_case() -> None:
    assert _probed(None) == 2
    assert _probed({"content-type": "application/json"}) == 2


def test_a_body_sent_as_text_plain_is_never_probed() -> None:
    """Its 422 is for the body's type, not for a string inside it (was ST901)."""
    assert _probed({"Content-Type": "text/plain"}) == 0


def test_a_url_the_server_refuses_unread_is_never_probed() -> None:
    """Over MAX_URL_BYTES the HTTP parser answers 400 before the app: no field to name."""
    # Prepare: a query of 6 bytes a character once percent-encoded, past the limit
    long = {"a": "è" * (hooks.MAX_URL_BYTES // 6 + 1)}
    short = {"a": "è" * 100}
    # Execute, Assert
    assert _probed(None, long) == 0
    assert _probed(None, short) == 2
