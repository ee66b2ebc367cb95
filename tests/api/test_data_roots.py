"""A spec's data paths stay inside the lab's data roots (FEDGEN_DATA_ROOTS, issue 28 finding 4):
POST /spec/validate, /runs, /runs/{id}/clone, /sweeps (each grid value) refuse `data.root` and
`data.folder.path` outside them with a 422 naming the field, and say nothing else about them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lab.config import Settings
from tests.support.datafiles import SIDE, write_npz
from tests.support.factories import make_spec

API = "/api/v1"


@pytest.fixture
def lab_root(settings: Settings, tmp_path: Path) -> Path:
    """The lab's one data root, with a symlink inside it that points out of it."""
    root = tmp_path / "lab-data"
    root.mkdir()
    (root / "escape").symlink_to("/etc")
    settings.data_roots = str(root)
    return root


def _folder_spec(path: str, root: str | None = None) -> dict[str, Any]:
    folder = {"path": path, "classes": 3, "image_size": SIDE, "channels": 1}
    data: dict[str, Any] = {"name": "folder", "folder": folder}
    if root is not None:
        data["root"] = root
    return make_spec(data=data)


def _outside(lab_root: Path) -> list[tuple[dict[str, Any], str]]:
    """Specs that reach outside the root, with the field each 422 must name."""
    return [
        (_folder_spec("/etc", str(lab_root)), "data.folder.path"),
        (_folder_spec("../../etc", str(lab_root)), "data.folder.path"),
        (_folder_spec("escape", str(lab_root)), "data.folder.path"),
        (make_spec(data={"name": "mnist", "root": "/etc"}), "data.root"),
        (make_spec(data={"name": "mnist", "root": f"{lab_root}/../.."}), "data.root"),
        (make_spec(data={"name": "mnist", "root": f"{lab_root}/escape"}), "data.root"),
    ]


def _refused(r: Any, field: str, lab_root: Path) -> None:
    """A member's refusal: the field, one message, neither the roots nor what lies outside."""
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert [d["field"] for d in detail] == [field], detail
    assert detail[0]["msg"] == f"{field}: not inside a data root the lab allows (FEDGEN_DATA_ROOTS)"
    assert str(lab_root.resolve()) not in r.text
    assert "passwd" not in r.text
    assert "group" not in r.text


def test_validate_refuses_paths_outside_the_roots(
    client: TestClient, auth: dict[str, str], tokens: dict[str, str], lab_root: Path
) -> None:
    for spec, field in _outside(lab_root):
        r = client.post(f"{API}/spec/validate", json={"spec": spec}, headers=auth)
        _refused(r, f"spec.{field}", lab_root)
    # An admin is told the path and the roots.
    admin = {"Authorization": f"Bearer {tokens['admin']}"}
    spec, field = _outside(lab_root)[0]
    r = client.post(f"{API}/spec/validate", json={"spec": spec}, headers=admin)
    assert r.status_code == 422
    assert "outside the lab's data roots" in r.json()["detail"][0]["msg"]
    assert str(lab_root.resolve()) in r.json()["detail"][0]["msg"]


def test_submit_and_clone_refuse_paths_outside_the_roots(
    client: TestClient, auth: dict[str, str], lab_root: Path, enqueued: list[Any]
) -> None:
    for spec, field in _outside(lab_root):
        r = client.post(f"{API}/runs", json={"spec": spec}, headers=auth)
        _refused(r, f"spec.{field}", lab_root)
    assert enqueued == []
    rid = client.post(f"{API}/runs", json={"spec": make_spec()}, headers=auth).json()["id"]
    r = client.post(
        f"{API}/runs/{rid}/clone",
        json={"changes": {"data": {"name": "mnist", "root": "/etc"}}},
        headers=auth,
    )
    _refused(r, "changes.data.root", lab_root)


def test_sweep_names_the_grid_value_that_leads_out(
    client: TestClient, auth: dict[str, str], lab_root: Path
) -> None:
    body = {
        "name": "roots",
        "base": make_spec(data={"name": "mnist"}),
        "grid": {"data.root": [str(lab_root / "a"), "/etc"]},
    }
    r = client.post(f"{API}/sweeps", json=body, headers=auth)
    _refused(r, "grid.data.root[1]", lab_root)
    body = {
        "name": "roots",
        "base": make_spec(data={"name": "mnist", "root": "/etc"}),
        "grid": {"seed": [1, 2]},
    }
    r = client.post(f"{API}/sweeps", json=body, headers=auth)
    _refused(r, "base.data.root", lab_root)


def test_paths_inside_a_root_are_accepted(
    client: TestClient, auth: dict[str, str], lab_root: Path
) -> None:
    write_npz(lab_root / "shapes")
    for spec in (
        _folder_spec("shapes", str(lab_root)),
        _folder_spec(str(lab_root / "shapes")),
        _folder_spec("shapes/../shapes", str(lab_root)),
    ):
        r = client.post(f"{API}/spec/validate", json={"spec": spec}, headers=auth)
        assert r.status_code == 200, r.text
        assert r.json()["warnings"] == []
    inside = make_spec(data={"name": "mnist", "root": str(lab_root / "mnist")})
    r = client.post(f"{API}/runs", json={"spec": inside}, headers=auth)
    assert r.status_code == 202, r.text
    assert r.json()["spec"]["data"]["root"] == str(lab_root / "mnist")
