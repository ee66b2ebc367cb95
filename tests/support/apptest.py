"""Dashboard pages through streamlit.testing's AppTest: open one, read what it says."""

from __future__ import annotations

from typing import Any

from streamlit.testing.v1 import AppTest


def open_page(app_path: str, page: str, state: dict[str, Any] | None = None) -> AppTest:
    """Run the entrypoint, switch to `page` (seeding session state first) and render it."""
    at = AppTest.from_file(app_path, default_timeout=30)
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    if page != "app_pages/runs.py":
        at.switch_page(page)
        at.run()
    return at


def texts(at: AppTest) -> str:
    """All markdown, captions, infos, errors and titles of the page, joined."""
    parts = (
        [e.value for e in at.markdown] + [e.value for e in at.caption] + [e.value for e in at.title]
    )
    parts += (
        [e.value for e in at.info] + [e.value for e in at.error] + [e.value for e in at.success]
    )
    return "\n".join(str(p) for p in parts)
