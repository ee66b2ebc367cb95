"""Arrows run one way: api/ imports nothing from worker/, and building the app loads no Celery."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imported_modules(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_api_sources_import_nothing_from_worker() -> None:
    """No `import worker...` / `from worker... import` anywhere under api/, late imports included."""
    files = sorted((ROOT / "api").rglob("*.py"))
    assert len(files) > 10  # the walk found the package
    offenders = [
        f"{f.relative_to(ROOT)}: {m}"
        for f in files
        for m in _imported_modules(f)
        if m == "worker" or m.startswith("worker.")
    ]
    assert offenders == []


@pytest.mark.slow
def test_building_the_app_loads_neither_worker_nor_celery(tmp_path: Path) -> None:
    """A fresh interpreter imports api.main and builds the app: no worker module, no Celery."""
    code = (
        "import sys\n"
        "from lab.config import Settings\n"
        "from api.main import create_app\n"
        f"create_app(Settings(home={str(tmp_path)!r}, broker_url='memory://'))\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('worker', 'celery', 'kombu'))\n"
        "print(repr(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"
