"""Shapes' own tests: the files it writes, its registration, and a short run on it.

Run with the plugin installed (`pip install -e examples/plugins/shapes`) or from its folder;
either way the declaration is registered once for these tests.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the plugin, installed or not

from fedgen_shapes import CLASSES, DECL, FOLDER, SIDE, generate  # noqa: E402

from fedgen.data import registry  # noqa: E402
from fedgen.data.folder import check_files  # noqa: E402
from fedgen.events import MemorySink  # noqa: E402
from fedgen.runner import run  # noqa: E402
from fedgen.spec import parse_spec  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _registered() -> Iterator[None]:
    installed = "shapes" in registry.dataset_names()  # loads the installed plugins first
    if not installed:
        registry.register_dataset(DECL)
    yield
    if not installed:
        registry.unregister_dataset("shapes")


def test_generate_writes_the_folder_layout(tmp_path: Path) -> None:
    """train.npz / test.npz with x (N, 28, 28) uint8 and balanced labels 0..2, the same for
    the same seed; the folder loader's check finds nothing wrong."""
    generate(tmp_path / "shapes")
    with np.load(tmp_path / "shapes" / "train.npz") as f:
        x, y = f["x"], f["y"]
    assert x.shape == (3000, SIDE, SIDE)
    assert x.dtype == np.uint8
    assert np.bincount(y).tolist() == [1000, 1000, 1000]
    assert check_files(FOLDER, tmp_path) == []
    generate(tmp_path / "again" / "shapes")
    with np.load(tmp_path / "again" / "shapes" / "train.npz") as f:
        assert np.array_equal(f["x"], x)
    generate(tmp_path / "shapes")  # already there: left as it is
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "shapes"]


def test_declaration() -> None:
    """A spec names it alone; its shape and classes are the folder layout's."""
    spec = parse_spec({"data": {"name": "shapes"}})
    decl = registry.get_dataset(spec.data.name)
    assert decl.input_shape(spec.data) == (1, SIDE, SIDE)
    assert decl.num_classes(spec.data) == len(CLASSES) == 3
    assert decl.problems(spec.data) == []  # written on first use: nothing to check before


@pytest.mark.slow
def test_a_run_on_shapes_writes_the_files_and_learns(tmp_path: Path) -> None:
    """The first load writes the files under the data root; FedAvg beats chance (1/3)."""
    spec = parse_spec(
        {
            "data": {"name": "shapes", "root": str(tmp_path)},
            "partition": {"num_users": 4, "alpha": 1.0},
            "users_per_round": 4,
            "rounds": 3,
            "local_steps": 10,
            "batch_size": 32,
            "lr": 0.05,
            "checkpoint_every": 0,
        }
    )
    sink = MemorySink()
    summary = run(spec, sink)
    assert (tmp_path / "shapes" / "train.npz").is_file()
    assert summary.status == "completed"
    assert summary.rounds_done == 3
    assert sink.events[-1].metrics["test_acc"] > 0.5


def test_entry_point_registers_the_dataset(tmp_path: Path) -> None:
    """The plugin loader finds `shapes` under group fedgen.datasets and registers it. Where the
    plugin is not installed (the repository's suite), a dist-info with this package's entry
    point, on the path for this test, stands in for the installed distribution."""
    from importlib import metadata

    from fedgen import plugins

    installed = any(ep.name == "shapes" for ep in metadata.entry_points(group="fedgen.datasets"))
    if not installed:
        info = tmp_path / "fedgen_shapes-0.1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: fedgen-shapes\nVersion: 0.1.0\n"
        )
        (info / "entry_points.txt").write_text("[fedgen.datasets]\nshapes = fedgen_shapes:DECL\n")
        sys.path.insert(0, str(tmp_path))
    try:
        record = next(
            r for r in plugins.load(force=True) if r.kind == "dataset" and r.name == "shapes"
        )
    finally:
        if not installed:
            sys.path.remove(str(tmp_path))
            plugins.load(force=True)
    assert record.ok, record.error
    assert record.provides == "shapes"
    assert record.distribution == "fedgen-shapes"
