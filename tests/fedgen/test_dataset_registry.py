"""One declaration per dataset: the built-ins declared through it, and a registered dataset
(as a plugin registers one) known to the spec, its schema, the loader, the sizes and workers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient

from fedgen.data.common import DatasetTensors
from fedgen.data.datasets import load_dataset
from fedgen.data.decl import DatasetDecl
from fedgen.data.registry import (
    BUILTINS,
    dataset_names,
    get_dataset,
    register_dataset,
    unregister_dataset,
)
from fedgen.data_spec import DataSpec
from fedgen.sizes import checkpoint_estimate, input_shape
from fedgen.spec import ExperimentSpec, PartitionSpec, SpecError, parse_spec
from vocab.host_datasets import loadable

API = "/api/v1"
BUILTIN_NAMES = (
    "mnist",
    "emnist-letters",
    "fashion-mnist",
    "celeba",
    "synthetic",
    "cifar10",
    "cifar100",
    "synthetic-fedprox",
    "folder",
)


def _blobs(data: DataSpec, partition: PartitionSpec) -> DatasetTensors:
    """2 classes of 3x12x12 images: the class is the sign of the mean."""
    g = torch.Generator().manual_seed(partition.data_seed)
    y = torch.arange(60) % 2
    x = torch.randn(60, 3, 12, 12, generator=g) * 0.3 + (y.float() * 2 - 1).view(-1, 1, 1, 1)
    return DatasetTensors("blobs", x[:48], y[:48], x[48:], y[48:], 2)


def _here(root: Path) -> bool | str:
    return (root / "blobs-ok").exists() or f"no {root / 'blobs-ok'}"


BLOBS = DatasetDecl("blobs", "Blobs", (3, 12, 12), 2, _blobs, available=_here)


@pytest.fixture
def blobs() -> Iterator[DatasetDecl]:
    register_dataset(BLOBS)
    yield BLOBS
    unregister_dataset("blobs")


def test_builtins_are_declared_once() -> None:
    """The built-ins, in order; each one's shape and classes as its loader gives them."""
    assert dataset_names()[: len(BUILTIN_NAMES)] == BUILTIN_NAMES
    assert tuple(d.name for d in BUILTINS) == BUILTIN_NAMES
    assert get_dataset("celeba").input_shape(DataSpec(name="celeba")) == (3, 84, 84)
    assert get_dataset("emnist-letters").classes == 26
    assert get_dataset("cifar100").input_shape(DataSpec(name="cifar100")) == (3, 32, 32)
    assert get_dataset("cifar100").train_class_counts == (500,) * 100
    assert get_dataset("cifar10").augment == "crop-flip"
    assert get_dataset("mnist").augment == "none"
    assert (
        get_dataset("synthetic").num_classes(DataSpec(name="synthetic", synthetic_classes=7)) == 7
    )
    with pytest.raises(KeyError, match="unknown dataset 'nope'; registered: mnist, "):
        get_dataset("nope")


def test_a_registered_dataset_is_known_everywhere(blobs: DatasetDecl, tmp_path: Path) -> None:
    """The spec takes it and its schema lists it; load_dataset calls its loader; the checkpoint
    estimate uses its shape; a worker offers it where its probe finds the files."""
    spec = parse_spec(
        {
            "data": {"name": "blobs"},
            "partition": {"num_users": 2, "min_samples": 5},
            "users_per_round": 2,
        }
    )
    schema = ExperimentSpec.model_json_schema(mode="validation")
    assert "blobs" in schema["$defs"]["DataSpec"]["properties"]["name"]["enum"]
    assert "blobs" in schema["$defs"]["FedDFParams"]["properties"]["proxy"]["enum"]
    assert "folder" not in schema["$defs"]["FedDFParams"]["properties"]["proxy"]["enum"]
    ds = load_dataset(spec.data, spec.partition)
    assert ds.name == "blobs"
    assert tuple(ds.train_x.shape) == (48, 3, 12, 12)
    assert input_shape(spec) == (3, 12, 2)
    assert checkpoint_estimate(spec).global_model > 0

    assert "blobs" not in loadable(tmp_path)
    assert blobs.missing(tmp_path) == f"no {tmp_path / 'blobs-ok'}"
    (tmp_path / "blobs-ok").mkdir()
    assert "blobs" in loadable(tmp_path)
    assert "folder" in loadable(tmp_path)  # each spec names its own files: always offered


def test_unknown_and_conflicting_registrations(blobs: DatasetDecl) -> None:
    """An unregistered name is a spec error listing the registered ones; a second, different
    declaration of a name is refused, the same one again is a no-op; names are checked."""
    with pytest.raises(
        SpecError, match=r"data\.name: unknown dataset 'shapes'; registered: .*blobs"
    ):
        parse_spec({"data": {"name": "shapes"}})
    register_dataset(blobs)
    other = DatasetDecl("blobs", "Other blobs", (1, 28, 28), 2, "x:y")
    with pytest.raises(ValueError, match="dataset 'blobs' is already registered"):
        register_dataset(other)
    with pytest.raises(ValueError, match="dataset 'mnist' is already registered"):
        register_dataset(DatasetDecl("mnist", "Mine", (1, 28, 28), 10, "x:y"))
    for bad in ("Blobs", "heldout", "a/b", ""):
        with pytest.raises(ValueError, match="dataset name"):
            DatasetDecl(bad, "Bad", (1, 28, 28), 2, "x:y")
    with pytest.raises(ValueError, match="not 'module:function'"):
        DatasetDecl("fine", "Fine", (1, 28, 28), 2, "nomodule")


def test_feddf_proxy_cannot_be_the_folder_dataset() -> None:
    """FedDF loads its proxy by name alone, so a dataset that needs data.folder is refused."""
    with pytest.raises(SpecError, match="dataset 'folder' needs data.folder"):
        parse_spec({"algorithm": {"name": "feddf", "proxy": "folder"}})
    assert parse_spec({"algorithm": {"name": "feddf", "proxy": "mnist"}}).algorithm.proxy == "mnist"


def test_api_lists_registered_datasets_and_names_the_folder_field(
    blobs: DatasetDecl, client: TestClient, auth: dict[str, str]
) -> None:
    """GET /spec/schema lists a registered dataset; a folder run without data.folder is a 422
    naming spec.data.folder."""
    schema = client.get(f"{API}/spec/schema", headers=auth).json()
    assert blobs.name in schema["$defs"]["DataSpec"]["properties"]["name"]["enum"]
    r = client.post(f"{API}/runs", json={"spec": {"data": {"name": "folder"}}}, headers=auth)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert any(
        d["field"] == "spec.data.folder" and "required when data.name is 'folder'" in d["msg"]
        for d in detail
    ), detail
