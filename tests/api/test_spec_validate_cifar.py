"""A CIFAR spec naming `data.root`: POST /spec/validate warns of a missing or malformed file on
`data.root` (the folder as this host sees it); POST /runs, a clone and POST /sweeps refuse it
with a 422 naming `data.root` and the file (issue 38). Without `data.root` the spec goes to a
worker that advertises the dataset, as before; `data.download: true` fetches missing files."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from lab.config import Settings
from tests.fedgen.test_cifar import write_cifar
from tests.support.factories import make_spec

API = "/api/v1"


@pytest.fixture(autouse=True)
def _lab_data_root(settings: Settings, tmp_path: Path) -> None:
    settings.data_roots = str(tmp_path)


def test_missing_cifar_files_are_a_warning_on_data_root(
    client: TestClient, auth: dict[str, str], tmp_path: Path
) -> None:
    spec = make_spec(data={"name": "cifar10", "root": str(tmp_path)})
    r = client.post(f"{API}/spec/validate", json={"spec": spec}, headers=auth)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["ok"] is True
    assert [w["field"] for w in body["warnings"]] == ["spec.data.root"]
    assert "data_batch_1" in body["warnings"][0]["msg"]
    write_cifar(tmp_path, "cifar10")
    r = client.post(f"{API}/spec/validate", json={"spec": spec}, headers=auth)
    assert r.json()["warnings"] == []


def _refused(r: Any, field: str, *words: str) -> str:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert [d["field"] for d in detail] == [field], detail
    for word in words:
        assert word in detail[0]["msg"], detail
    return str(detail[0]["msg"])


class _Boom:
    """A pickle that would run a command when loaded (never loaded by the check)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        import os

        return (os.system, (f"touch {self.marker}",))


def test_submission_refuses_a_missing_or_malformed_cifar_file_naming_data_root(
    client: TestClient, auth: dict[str, str], tmp_path: Path, enqueued: list[Any]
) -> None:
    root = tmp_path / "cifar"
    root.mkdir()
    spec = make_spec(data={"name": "cifar10", "root": str(root)})
    r = client.post(f"{API}/runs", json={"spec": spec}, headers=auth)
    msg = _refused(r, "spec.data.root", "data_batch_1", "test_batch", "data.root")
    assert str(tmp_path.resolve()) not in msg.replace(str(root), "")  # the root as given
    folder = write_cifar(root, "cifar10")
    r = client.post(f"{API}/runs", json={"spec": spec}, headers=auth)
    assert r.status_code == 202, r.text
    rid = r.json()["id"]
    # One file gone: named.
    (folder / "data_batch_4").unlink()
    r = client.post(f"{API}/runs", json={"spec": spec}, headers=auth)
    msg = _refused(r, "spec.data.root", "data_batch_4 not found")
    assert "data_batch_1," not in msg.split(" not found")[0]
    # ... but data.download fetches missing files on the worker.
    fetch = make_spec(data={"name": "cifar10", "root": str(root), "download": True})
    assert client.post(f"{API}/runs", json={"spec": fetch}, headers=auth).status_code == 202
    write_cifar(root, "cifar10")
    # Not a pickle; a pickle of another layout; labels out of range; a pickle naming a global.
    (folder / "data_batch_3").write_bytes(b"not a pickle")
    r = client.post(f"{API}/runs", json={"spec": spec}, headers=auth)
    _refused(r, "spec.data.root", "malformed CIFAR file", "data_batch_3", "data.root")
    with (folder / "data_batch_3").open("wb") as fh:
        pickle.dump({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, fh, protocol=2)
    r = client.post(f"{API}/runs", json={"spec": spec}, headers=auth)
    _refused(r, "spec.data.root", "data_batch_3", "expected uint8 (N, 3072)")
    with (folder / "data_batch_3").open("wb") as fh:
        pickle.dump({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 10]}, fh, protocol=2)
    r = client.post(f"{API}/runs", json={"spec": spec}, headers=auth)
    _refused(r, "spec.data.root", "data_batch_3", "labels outside [0, 10)")
    write_cifar(root, "cifar10")
    marker = tmp_path / "ran"
    (folder / "test_batch").write_bytes(pickle.dumps(_Boom(marker), protocol=2))
    r = client.post(f"{API}/runs", json={"spec": spec}, headers=auth)
    _refused(r, "spec.data.root", "test_batch", "posix.system is not allowed")
    assert not marker.exists()
    # A clone is checked the same way.
    r = client.post(f"{API}/runs/{rid}/clone", json={"changes": {"seed": 5}}, headers=auth)
    _refused(r, "changes.data.root", "test_batch")
    # Without data.root: the workers' data roots, dispatch to a worker offering cifar10.
    plain = make_spec(data={"name": "cifar10"})
    assert client.post(f"{API}/runs", json={"spec": plain}, headers=auth).status_code == 202


def test_cifar100_needs_its_own_files(
    client: TestClient, auth: dict[str, str], tmp_path: Path
) -> None:
    write_cifar(tmp_path, "cifar10")
    spec = make_spec(data={"name": "cifar100", "root": str(tmp_path)})
    r = client.post(f"{API}/runs", json={"spec": spec}, headers=auth)
    _refused(r, "spec.data.root", "cifar-100-python", "train", "test")
    write_cifar(tmp_path, "cifar100", per_file=120)
    assert client.post(f"{API}/runs", json={"spec": spec}, headers=auth).status_code == 202


def test_a_sweep_names_the_grid_root_with_a_bad_file(
    client: TestClient, auth: dict[str, str], tmp_path: Path
) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    write_cifar(good, "cifar10")
    bad.mkdir()
    body = {
        "name": "cifar-roots",
        "base": make_spec(data={"name": "cifar10"}),
        "grid": {"data.root": [str(good), str(bad)]},
    }
    r = client.post(f"{API}/sweeps", json=body, headers=auth)
    _refused(r, "grid.data.root[1]", "data_batch_1")
    body["grid"] = {"data.root": [str(good)], "seed": [1, 2]}
    assert client.post(f"{API}/sweeps", json=body, headers=auth).status_code == 202
