"""Headless Chromium on the real stack: a researcher submits a run on their own folder dataset.

Picking "folder" shows the folder's fields (path, classes as a count or names, channels,
image size); a 3-class npz folder written by the test is queued with exactly that
`data.folder` (read back through the API); an error the API finds in the folder section is
shown under its field, naming it; a folder the server's host does not have is a warning
naming data.folder.path (the spec stays valid: a worker elsewhere may have it). One stack (API + dashboard, no worker: the run stays queued)
serves the module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fedgen_lab.endpoints import open_api
from tests.support.datafiles import CLASSES, SIDE, write_npz
from tests.support.needs import needs
from tests.support.stack import CHROMIUM, Stack, browser_page, lab_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SHOTS = Path("/tmp/shots")
FOLDER_LABELS = ("Folder path", "Classes (count or names)", "Channels", "Image size")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    needs(os.path.exists(CHROMIUM), f"Debian's chromium at {CHROMIUM}")
    # Every test's tmp_path (where its folders are written) lies inside the lab's data roots.
    roots = {"FEDGEN_DATA_ROOTS": str(tmp_path_factory.getbasetemp())}
    with lab_stack(tmp_path_factory.mktemp("home"), worker=False, env_extra=roots) as s:
        yield s


@pytest.fixture
def page(stack: Stack, tmp_path: Path) -> Iterator[Any]:
    """The Submit page, open."""
    with browser_page(tmp_path / "profile", height=2300) as p:
        p.goto(f"{stack.dashboard_url}/submit")  # type: ignore[attr-defined]
        p.get_by_role("heading", name="Submit").wait_for(timeout=30_000)  # type: ignore[attr-defined]
        yield p


def _fill(page: Any, label: str, value: object) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    page.wait_for_timeout(400)


def _pick_folder(page: Any) -> None:
    page.get_by_role("combobox", name="Dataset").click()
    page.get_by_role("option", name="folder", exact=True).click()
    page.get_by_label("Folder path", exact=True).wait_for(timeout=15_000)


def _small_run(page: Any) -> None:
    for label, value in (("Users", 3), ("Users per round", 2), ("Rounds", 2), ("Local steps T", 2)):
        _fill(page, label, value)


def test_folder_fields_only_for_the_folder_dataset(page: Any) -> None:
    """The default dataset shows no folder field; picking folder shows all four, with help."""
    # Assert (before)
    assert all(page.get_by_label(label, exact=True).count() == 0 for label in FOLDER_LABELS)
    # Execute
    _pick_folder(page)
    # Assert
    for label in FOLDER_LABELS:
        assert page.get_by_label(label, exact=True).count() == 1, label
    assert page.get_by_label("Channels", exact=True).input_value() == "1"
    assert page.get_by_label("Image size", exact=True).input_value() == "28"
    # required fields left empty are named under them and in the refusal above the buttons
    page.get_by_text("Refused until fixed").wait_for(timeout=15_000)
    assert page.get_by_text("data.folder.path: is required").count() == 2
    assert page.get_by_text("data.folder.classes: is required").count() == 2


def test_folder_run_is_queued_with_its_spec(page: Any, stack: Stack, tmp_path: Path) -> None:
    """A 3-class npz folder: submitted from the form, queued with that data.folder."""
    # Prepare
    shapes = write_npz(tmp_path / "shapes")
    _pick_folder(page)
    _fill(page, "Folder path", shapes)
    _fill(page, "Classes (count or names)", ", ".join(CLASSES))
    _fill(page, "Image size", SIDE)
    _small_run(page)
    page.get_by_text("folder:", exact=False).first.wait_for(timeout=15_000)  # in the YAML
    page.get_by_role("heading", name="Submit").click()  # no focused box in the picture
    page.wait_for_timeout(300)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "submit_folder.png"), full_page=True)
    # Execute
    page.get_by_role("button", name="Submit run").click()
    page.get_by_text("Queued run").wait_for(timeout=30_000)
    run_id = re.search(r"Queued run (\S+)\.", page.get_by_text("Queued run").inner_text())
    # Assert
    assert run_id is not None
    with open_api(stack.api_url, stack.token) as c:
        run = c.get_run(run_id.group(1))
    assert run.status == "queued"
    folder = {"path": str(shapes), "classes": list(CLASSES), "channels": 1, "image_size": SIDE}
    assert run.spec["data"]["name"] == "folder"
    assert run.spec["data"]["folder"] == folder


def test_server_error_is_shown_under_the_folder_field(page: Any) -> None:
    """Class names the API refuses (not distinct): Validate names data.folder.classes under
    the field, and nothing is queued."""
    # Prepare
    _pick_folder(page)
    _fill(page, "Folder path", "shapes")
    _fill(page, "Classes (count or names)", "cat, cat, dog")
    # Execute
    page.get_by_role("button", name="Validate").click()
    shown = page.get_by_text(re.compile(r"^data\.folder\.classes: class names must be distinct"))
    shown.wait_for(timeout=30_000)
    # Assert
    assert page.get_by_text("The spec is valid").count() == 0


def test_missing_folder_is_named_on_the_form(page: Any, tmp_path: Path) -> None:
    """A path that does not exist: Validate says the spec is valid (a worker on another host may
    have the folder) and warns that the server's host has no such folder, naming
    data.folder.path."""
    # Prepare
    _pick_folder(page)
    _fill(page, "Folder path", tmp_path / "no-such-folder")
    _fill(page, "Classes (count or names)", 3)
    # Execute
    page.get_by_role("button", name="Validate").click()
    page.get_by_text("The spec is valid").wait_for(timeout=30_000)
    # Assert
    warned = page.get_by_text(
        re.compile(r"^data\.folder\.path: folder .*no-such-folder does not exist")
    )
    assert warned.count() == 1
    assert "seen from the lab server's host" in warned.inner_text()
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "submit_folder_missing.png"), full_page=True)
