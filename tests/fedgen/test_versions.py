"""The code version of an installed copy covers the sources of every product package."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from fedgen import versions

ROOT = Path(__file__).resolve().parents[2]


def _shipped_packages() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return {pattern.rstrip("*") for pattern in include}


def test_the_hashed_packages_are_the_shipped_ones() -> None:
    assert set(versions.PACKAGES) == _shipped_packages()


@pytest.mark.parametrize("package", sorted(_shipped_packages()))
def test_a_change_in_any_shipped_package_changes_the_source_hash(
    tmp_path: Path, package: str
) -> None:
    copy = tmp_path / "copy"
    for name in versions.PACKAGES:
        (copy / name).mkdir(parents=True)
        (copy / name / "module.py").write_text(f"NAME = {name!r}\n")
    before = versions._sources_hash(copy)
    (copy / package / "module.py").write_text("NAME = 'changed'\n")
    assert versions._sources_hash(copy) != before
