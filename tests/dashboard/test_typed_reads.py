"""The dashboard reads the API's answers as typed models: `.get("…")` is left for what is a dict
by nature (a spec, Streamlit's session state and query string), and their number is held."""

from __future__ import annotations

import re
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"
MAX_GET_LINES = 40  # the house's target (spec and Streamlit state only)
STATE = re.compile(r"\b(st\.session_state|st\.query_params|ss)\.get\(\"")
SPEC = re.compile(r"\b(spec|flat|fields|setting|values|lists|defaults|spec_fields|grid|base)\b")


def _get_lines() -> list[str]:
    return [
        f"{path.relative_to(DASHBOARD.parent)}:{n}: {line.strip()}"
        for path in sorted(DASHBOARD.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if '.get("' in line
    ]


def test_dict_reads_stay_few() -> None:
    lines = _get_lines()
    assert len(lines) <= MAX_GET_LINES, "\n".join(lines)


def test_dict_reads_are_of_specs_or_streamlit_state() -> None:
    """Every `.get("…")` reads Streamlit's state or a spec's (nested or flattened) fields."""
    other = [line for line in _get_lines() if not STATE.search(line) and not SPEC.search(line)]
    assert not other, "\n".join(other)
