"""Page scripts are functions: each page module's top level only defines (imports, constants,
functions, classes) and runs its `render()` under `if __name__ == "__main__":` (Streamlit runs
a page script as __main__), so importing a page draws nothing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"
PAGES = sorted((DASHBOARD / "app_pages").glob("*.py"))
DEFINES = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)


def _is_main_guard(node: ast.stmt, entry: str) -> bool:
    """`if __name__ == "__main__": <entry>()` and nothing else."""
    if not isinstance(node, ast.If) or node.orelse or len(node.body) != 1:
        return False
    test, body = node.test, node.body[0]
    guard = (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )
    call = isinstance(body, ast.Expr) and isinstance(body.value, ast.Call)
    return guard and call and ast.unparse(body.value) == f"{entry}()"


# Calls that draw or ask the API: a constant built at import must make none of them.
DRAWS = ("st.", "api_client.", "url_state.", "run_picker.", "loaders.")
DESCRIBES = ("st.column_config.", "table_columns.")  # column descriptions: draw nothing


def _draws(node: ast.stmt) -> bool:
    """Whether an assignment's value calls Streamlit, the page helpers or the API."""
    if not isinstance(node, ast.Assign | ast.AnnAssign):
        return False  # a function's or class's body runs when called
    return any(
        ast.unparse(c.func).startswith(DRAWS) and not ast.unparse(c.func).startswith(DESCRIBES)
        for c in ast.walk(node)
        if isinstance(c, ast.Call)
    )


def _runs_at_import(path: Path, entry: str) -> list[str]:
    """The top-level statements of `path` that do something at import, as source lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = tree.body[1:] if ast.get_docstring(tree) else tree.body
    return [
        ast.unparse(node).splitlines()[0]
        for node in body
        if not (isinstance(node, DEFINES) and not _draws(node)) and not _is_main_guard(node, entry)
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_top_level_only_defines(page: Path) -> None:
    """A page defines `render()` and runs it only as Streamlit's __main__."""
    # Execute
    tree = ast.parse(page.read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    # Assert
    assert "render" in defined
    assert _runs_at_import(page, "render") == []
    assert sum(_is_main_guard(n, "render") for n in tree.body) == 1


def test_entrypoint_top_level_only_defines() -> None:
    """streamlit_app.py defines main() and runs it as __main__; beside it, only the sys.path
    bootstrap `streamlit run` needs before the dashboard's imports."""
    # Execute
    left = _runs_at_import(DASHBOARD / "streamlit_app.py", "main")
    # Assert
    assert left == ["if _ROOT not in sys.path:"]
