"""The sign-in cookie's attributes: SameSite=Strict always, Secure over https (issue 28)."""

from __future__ import annotations

import pytest

from dashboard import token_store


@pytest.mark.parametrize(
    ("public_url", "secure"),
    [
        ("https://lab.example", True),
        ("HTTPS://lab.example/", True),
        ("http://lab", False),
        ("", False),
    ],
)
def test_the_cookie_is_secure_when_the_lab_is_published_over_https(
    monkeypatch: pytest.MonkeyPatch, public_url: str, secure: bool
) -> None:
    """FEDGEN_PUBLIC_URL https://...: Secure even if a page is reached over plain http."""
    monkeypatch.setenv("FEDGEN_PUBLIC_URL", public_url)
    assert token_store.secure() is secure


def test_the_cookie_writer_sets_strict_and_secure_over_https() -> None:
    """The inline writer: SameSite=Strict, and Secure when told so or the page is https."""
    assert "SameSite=Strict" in token_store._JS
    assert 'data.secure || window.location.protocol === "https:"' in token_store._JS
