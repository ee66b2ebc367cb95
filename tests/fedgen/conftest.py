"""Shared helpers for the simulation-library tests: tiny synthetic specs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.specs import tiny_spec


@pytest.fixture
def make_tiny_spec() -> Any:
    return tiny_spec
