"""Run statuses are vocab.run_status.RunStatus everywhere: no module compares a status with, or
sets one to, a string of its own (the database holds the same list: migration 0009)."""

from __future__ import annotations

import re
from pathlib import Path

from vocab.run_status import ACTIVE, RUN_STATUSES, TERMINAL, RunStatus

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("fedgen", "vocab", "lab", "api", "worker", "dashboard", "fedgen_lab")
WORDS = "|".join(RUN_STATUSES)
# `status == "failed"`, `name != "queued"`, `status="running"`, `in ("failed", ...)`
SPELLED = re.compile(rf"""(?:[=!]=\s*|status=|\bin \(\s*)["']({WORDS})["']""")


def test_no_status_is_spelled_outside_its_declaration() -> None:
    """Comparisons and assignments of a run status use RunStatus."""
    # Execute
    found = {
        str(path.relative_to(ROOT)): SPELLED.findall(path.read_text(encoding="utf-8"))
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if path != ROOT / "vocab" / "run_status.py"  # the declaration itself
    }
    # Assert
    assert {p: words for p, words in found.items() if words} == {}


def test_statuses_are_their_words() -> None:
    """Each member is its word (JSON, the database and query strings hold the word); active
    and terminal statuses split the list."""
    # Assert
    assert [str(s) for s in RunStatus] == ["queued", "running", "succeeded", "failed", "cancelled"]
    assert RunStatus("failed") is RunStatus.FAILED
    assert set(ACTIVE) | set(TERMINAL) == set(RUN_STATUSES)
    assert not set(ACTIVE) & set(TERMINAL)
