"""Dashboard pages through streamlit.testing's AppTest: open one, read what it says."""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest


def open_page(
    app_path: str,
    page: str,
    state: dict[str, Any] | None = None,
    params: dict[str, str] | None = None,
) -> AppTest:
    """Open `page` (a file under app_pages/) the way a shared link does, `?page=<its url
    path>&<params>` (seeding session state first), and render it: one run, without drawing
    the Runs page first as a visit of the root and a switch would."""
    at = AppTest.from_file(app_path, default_timeout=30)
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.query_params.update({"page": url_paths(app_path)[page], **(params or {})})
    return at.run()


def url_paths(app_path: str) -> dict[str, str]:
    """Page file (`app_pages/runs.py`) -> the url path the app's entry point gives it."""
    found = page_declarations(app_path).items()
    return {page: str(getattr(kw.get("url_path"), "value", "")) for page, kw in found}


@functools.cache
def page_declarations(app_path: str) -> dict[str, dict[str, ast.expr]]:
    """Page file (`app_pages/runs.py`) -> the keywords of its `st.Page(_PAGES / "runs.py",
    title=..., url_path=...)` in the app's entry point, read from the source (the hidden
    forwarder, a function, is left out)."""
    found: dict[str, dict[str, ast.expr]] = {}
    for node in ast.walk(ast.parse(Path(app_path).read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "st.Page" and node.args):
            continue
        script = node.args[0]
        if isinstance(script, ast.BinOp) and isinstance(script.right, ast.Constant):
            keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
            found[f"app_pages/{script.right.value}"] = keywords
    return found


def texts(at: AppTest) -> str:
    """All markdown, captions, infos, errors and titles of the page, joined."""
    parts = (
        [e.value for e in at.markdown] + [e.value for e in at.caption] + [e.value for e in at.title]
    )
    parts += (
        [e.value for e in at.info] + [e.value for e in at.error] + [e.value for e in at.success]
    )
    return "\n".join(str(p) for p in parts)
