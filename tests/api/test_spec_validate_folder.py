"""POST /spec/validate of a `folder` dataset: its files as the server's host sees them, said as
warnings beside the field (the spec stays valid: the worker that runs it may have the files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lab.config import Settings
from tests.support.datafiles import SIDE, write_npz
from tests.support.factories import make_spec

API = "/api/v1"


@pytest.fixture(autouse=True)
def _lab_data_root(settings: Settings, tmp_path: Path) -> None:
    """tmp_path is the lab's data root (FEDGEN_DATA_ROOTS): the folders these tests write."""
    settings.data_roots = str(tmp_path)


def _folder(root: Path, path: str, image_size: int = SIDE) -> dict[str, Any]:
    folder = {"path": path, "classes": 3, "image_size": image_size, "channels": 1}
    return make_spec(data={"name": "folder", "root": str(root), "folder": folder})


def _validate(client: TestClient, auth: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    r = client.post(f"{API}/spec/validate", json={"spec": spec}, headers=auth)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_a_missing_folder_is_a_warning_on_its_path(
    client: TestClient, auth: dict[str, str], tmp_path: Path
) -> None:
    # Execute
    body = _validate(client, auth, _folder(tmp_path, "no-such-folder"))
    # Assert
    assert body["ok"] is True
    assert [w["field"] for w in body["warnings"]] == ["spec.data.folder.path"]
    msg = body["warnings"][0]["msg"]
    assert f"folder {tmp_path / 'no-such-folder'} does not exist" in msg
    assert "seen from the lab server's host" in msg


def test_a_wrong_shape_is_a_warning_naming_the_section(
    client: TestClient, auth: dict[str, str], tmp_path: Path
) -> None:
    # Prepare: the files are SIDE x SIDE; the spec says 28
    write_npz(tmp_path / "shapes")
    # Execute
    body = _validate(client, auth, _folder(tmp_path, "shapes", image_size=28))
    # Assert
    assert [w["field"] for w in body["warnings"]] == ["spec.data.folder"]
    assert f"train.npz: x has shape (90, {SIDE}, {SIDE})" in body["warnings"][0]["msg"]


def test_good_files_and_other_datasets_give_no_warning(
    client: TestClient, auth: dict[str, str], tmp_path: Path
) -> None:
    # Prepare
    write_npz(tmp_path / "good")
    # Execute / Assert
    assert _validate(client, auth, _folder(tmp_path, "good"))["warnings"] == []
    assert _validate(client, auth, make_spec())["warnings"] == []
