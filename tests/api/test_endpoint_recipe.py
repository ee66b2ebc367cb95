"""The "How to add an endpoint" recipe (docs/architecture.md) names the files a route needs: the
route modules are exactly those api.v1 includes, and the public exceptions are the ones it lists."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

from api import v1

ROOT = Path(__file__).resolve().parents[2]


def _recipe() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("## How to add an endpoint")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _named_files(recipe: str) -> set[str]:
    return set(re.findall(r"`((?:api|vocab|tests)/[^`\s]+\.py)`", recipe))


def test_every_route_module_is_included_and_every_included_router_is_a_route_module() -> None:
    modules = sorted(p.stem for p in (ROOT / "api" / "routes").glob("*.py") if p.stem != "__init__")
    routers = [importlib.import_module(f"api.routes.{m}").router for m in modules]
    assert {id(r) for r in routers} == {id(r) for r in v1.ROUTERS}
    assert "api/routes/<topic>.py" in _named_files(_recipe())


def test_the_recipe_names_the_module_that_declares_the_routers_and_the_exceptions() -> None:
    recipe = _recipe()
    declaring = Path(inspect.getsourcefile(v1) or "").relative_to(ROOT).as_posix()
    assert declaring in _named_files(recipe)
    for name in ("ROUTERS", "PUBLIC", "SELF_AUTHENTICATED"):
        assert f"`{name}`" in recipe
        assert hasattr(v1, name)
    # The paths it calls public are exactly the declared ones.
    listed = re.search(r"`PUBLIC` \(([^)]*)\)", recipe)
    assert listed is not None
    assert set(re.findall(r"`(/[^`]+)`", listed.group(1))) == set(v1.PUBLIC)


def test_every_named_file_exists_and_every_pattern_matches_one() -> None:
    for name in _named_files(_recipe()):
        if "<" in name:
            pattern = re.sub(r"<[^>]+>", "*", name)
            assert list(ROOT.glob(pattern)), name
        else:
            assert (ROOT / name).is_file(), name
