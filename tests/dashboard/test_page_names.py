"""One name per page: the navigation's title of each page is the title the page shows, and the
README's dashboard section names the pages by those titles.

Read from the source (no server, no Streamlit run): `st.Page(path, title=...)` in
dashboard/streamlit_app.py against the page script's first `st.title(...)`. A title built at
run time (an f-string) must start with the navigation's title.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.apptest import page_declarations, url_paths

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"
README = DASHBOARD.parent / "README.md"


def _literal(node: ast.expr) -> str | None:
    """A string constant's value; an f-string's leading literal text; else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def _is_call(node: ast.AST, owner: str, name: str) -> bool:
    """`owner.name(...)`, e.g. st.Page(...) or st.title(...)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == name
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == owner
    )


def nav_titles() -> dict[str, str]:
    """Page script (relative to dashboard/) -> its navigation title, from streamlit_app.py."""
    out: dict[str, str] = {}
    for script, keywords in page_declarations(str(DASHBOARD / "streamlit_app.py")).items():
        assert "title" in keywords, f"{script}: st.Page without a title"
        out[script] = str(_literal(keywords["title"]))
    return out


def page_title(script: str) -> str | None:
    """The first st.title(...) text of a page script (an f-string's leading text)."""
    tree = ast.parse((DASHBOARD / script).read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_call(n, "st", "title")]
    calls.sort(key=lambda n: (n.lineno, n.col_offset))
    return _literal(calls[0].args[0]) if calls else None


def test_every_page_shows_its_navigation_title() -> None:
    """Navigation title == page title, for every page (Paper is the studies, Sweep tables the
    tables of any sweep)."""
    # Execute
    titles = nav_titles()
    shown = {script: page_title(script) for script in titles}
    # Assert
    assert titles["app_pages/studies.py"] == "Paper"
    assert titles["app_pages/paper_tables.py"] == "Sweep tables"
    assert len(titles) >= 9
    mismatched = {
        s: (titles[s], t) for s, t in shown.items() if not (t or "").startswith(titles[s])
    }
    assert mismatched == {}


def test_readme_names_the_pages_as_the_navigation_does() -> None:
    """The README's dashboard section says **Paper** and **Sweep tables**, not another name."""
    # Prepare
    text = README.read_text()
    section = text[text.index("### Dashboard") :]
    section = section[: section.index("\n## ")]
    # Assert
    for title in nav_titles().values():
        assert f"**{title}**" in section, title
    assert "Paper tables" not in section


def test_every_page_script_has_a_url_path_of_its_own() -> None:
    """Each script under app_pages/ is declared with its own url path: pages open by their
    `?page=` links (tests/support/apptest.open_page opens them so too)."""
    # Execute
    paths = url_paths(str(DASHBOARD / "streamlit_app.py"))
    # Assert
    scripts = {f"app_pages/{p.name}" for p in (DASHBOARD / "app_pages").glob("*.py")}
    assert set(paths) == scripts - {"app_pages/__init__.py"}
    assert all(paths.values())
    assert len(set(paths.values())) == len(paths)
