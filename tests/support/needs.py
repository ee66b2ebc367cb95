"""`needs(condition, what)`: skip a test whose prerequisite is missing, but fail it in CI.

`make test` installs or starts everything the suite needs (Fashion-MNIST, Chromium,
PostgreSQL, Redis), so in CI (CI=true) a missing prerequisite is a broken set-up,
never a silent skip.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def needs(condition: bool, what: str) -> None:
    """Skip (locally) or fail (in CI) unless `condition` holds."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"{what} is missing with CI=true; `make test` should have provided it")
    pytest.skip(f"{what} is missing")
