"""The `folder` dataset: a lab's own 3-class images (ImageFolder or npz) run to the end, and
`fedgen validate` names a missing folder, a wrong shape and a wrong class count."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from PIL import Image

from fedgen.cli import main
from fedgen.data.common import DatasetError
from fedgen.data.datasets import load_dataset
from fedgen.events import MemorySink
from fedgen.runner import run
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from tests.support.datafiles import CLASSES, SIDE, shape_images, shape_labels, write_npz

ROOT = Path(__file__).resolve().parents[2]


def write_imagefolder(path: Path, n_train: int = 90, n_test: int = 30) -> Path:
    for split, n, seed in (("train", n_train, 1), ("test", n_test, 2)):
        y = shape_labels(n)
        for i, (img, c) in enumerate(zip(shape_images(y, seed), y, strict=True)):
            folder = path / split / CLASSES[c]
            folder.mkdir(parents=True, exist_ok=True)
            # RGB and 2x the size on disk: the loader converts to grey and resizes.
            big = Image.fromarray(img).convert("RGB").resize((2 * SIDE, 2 * SIDE))
            big.save(folder / f"{i:03d}.png")
    return path


def folder_spec(
    root: Path, path: str, classes: Any = 3, image_size: int = SIDE, **over: Any
) -> ExperimentSpec:
    data = {
        "name": "folder",
        "root": str(root),
        "folder": {"path": path, "classes": classes, "image_size": image_size, "channels": 1},
    }
    base: dict[str, Any] = {
        "data": data,
        "partition": {"num_users": 4, "alpha": 0.5, "min_samples": 5},
        "users_per_round": 2,
        "rounds": 3,
        "local_steps": 5,
        "batch_size": 16,
        "lr": 0.05,
        "checkpoint_every": 0,
    }
    return parse_spec({**base, **over})


@pytest.mark.slow  # real training / a child process
@pytest.mark.parametrize("layout", ["npz", "imagefolder"])
def test_a_three_class_folder_dataset_runs_to_the_end(tmp_path: Path, layout: str) -> None:
    """A run on a 3-class folder dataset finishes; the model is built for its 1x16x16 images."""
    write = write_npz if layout == "npz" else write_imagefolder
    write(tmp_path / "mine")
    spec = folder_spec(tmp_path, "mine", classes=list(CLASSES) if layout == "imagefolder" else 3)
    ds = load_dataset(spec.data, spec.partition)
    assert tuple(ds.train_x.shape) == (90, 1, SIDE, SIDE)
    assert tuple(ds.test_x.shape) == (30, 1, SIDE, SIDE)
    assert ds.num_classes == 3
    assert float(ds.train_x.min()) >= -1.0
    assert float(ds.train_x.max()) <= 1.0
    assert sorted(set(ds.train_y.tolist())) == [0, 1, 2]

    sink = MemorySink()
    summary = run(spec, sink)
    assert summary.status == "completed"
    assert summary.rounds_done == 3
    assert [e.round for e in sink.events] == [0, 1, 2, 3]
    assert sink.info is not None
    assert len(sink.info.label_histogram) == 4  # one per user: a Dirichlet split over 3 labels
    assert all(len(h) == 3 for h in sink.info.label_histogram)
    # The band is an easy cue: after 3 rounds the global model is far above chance (1/3).
    assert sink.events[-1].metrics["test_acc"] > 0.6


def _validate(tmp_path: Path, spec: ExperimentSpec, capsys: pytest.CaptureFixture[str]) -> str:
    file = tmp_path / "spec.yaml"
    file.write_text(yaml.safe_dump(spec.model_dump(mode="json")))
    rc = main(["validate", str(file)])
    out = capsys.readouterr()
    assert rc != 0, out.out
    return out.err


def test_validate_names_the_missing_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fedgen validate` of a spec whose folder is not there names data.folder and the path;
    a run of it fails with the same words (DatasetError)."""
    spec = folder_spec(tmp_path, "nowhere")
    err = _validate(tmp_path, spec, capsys)
    assert f"data.folder.path: folder {tmp_path / 'nowhere'} does not exist" in err
    with pytest.raises(DatasetError, match=r"data\.folder\.path: folder .*nowhere does not exist"):
        load_dataset(spec.data, spec.partition)


def test_validate_names_a_wrong_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """x of shape (N, 28) is refused with its shape and the shape expected."""
    path = tmp_path / "flat"
    path.mkdir()
    for split in ("train", "test"):
        np.savez(path / f"{split}.npz", x=np.zeros((100, 28), np.uint8), y=np.zeros(100, np.int64))
    err = _validate(tmp_path, folder_spec(tmp_path, "flat", image_size=28), capsys)
    assert (
        "data.folder: train.npz: x has shape (100, 28); expected (N, H, W) or (N, C, H, W) "
        "with H, W = 28" in err
    )


def test_validate_names_other_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Images of another size, labels past the class count, class folders that differ."""
    write_npz(tmp_path / "npz")
    err = _validate(tmp_path, folder_spec(tmp_path, "npz", image_size=28), capsys)
    assert "x has shape (90, 16, 16); expected (N, H, W) or (N, C, H, W) with H, W = 28" in err
    err = _validate(tmp_path, folder_spec(tmp_path, "npz", classes=2), capsys)
    assert "data.folder.classes: train.npz: labels span 0..2, outside 0..1 for 2 classes" in err

    write_imagefolder(tmp_path / "img", n_train=6, n_test=3)
    err = _validate(tmp_path, folder_spec(tmp_path, "img", classes=4), capsys)
    assert "data.folder.classes:" in err
    assert "has 3 class folders (circle, square, stripe); expected 4" in err
    err = _validate(tmp_path, folder_spec(tmp_path, "img", classes=["circle", "dot"]), capsys)
    assert "expected ['circle', 'dot']" in err


def test_spec_rules_of_the_folder_section() -> None:
    """`folder` needs data.folder, other datasets refuse it; a spec without it hashes as before
    (no `folder` key in its canonical form)."""
    with pytest.raises(SpecError, match=r"data\.folder: required when data\.name is 'folder'"):
        parse_spec({"data": {"name": "folder"}})
    with pytest.raises(SpecError, match=r"data\.folder: only for data\.name 'folder', not 'mnist'"):
        parse_spec({"data": {"name": "mnist", "folder": {"path": "x", "classes": 3}}})
    with pytest.raises(SpecError, match=r"data\.folder\.classes: expected a class count 2\.\.1000"):
        parse_spec({"data": {"name": "folder", "folder": {"path": "x", "classes": 1}}})
    with pytest.raises(SpecError, match=r"data\.folder\.image_size"):
        parse_spec(
            {"data": {"name": "folder", "folder": {"path": "x", "classes": 3, "image_size": 4}}}
        )
    assert '"folder"' not in ExperimentSpec().canonical_json()
    with_folder = parse_spec({"data": {"name": "folder", "folder": {"path": "x", "classes": 3}}})
    assert '"folder":{"channels":1,"classes":3,"image_size":28,"path":"x"}' in (
        with_folder.canonical_json()
    )


@pytest.mark.slow  # real training / a child process
def test_checking_a_folder_does_not_import_torch(tmp_path: Path) -> None:
    """`fedgen validate` stays torch-free with a folder dataset (both layouts checked)."""
    write_npz(tmp_path / "npz", n_train=9, n_test=3)
    write_imagefolder(tmp_path / "img", n_train=6, n_test=3)
    code = (
        "import sys\n"
        "from fedgen.data.registry import get_dataset\n"
        "from fedgen.spec import parse_spec\n"
        "for p in ('npz', 'img'):\n"
        "    s = parse_spec({'data': {'name': 'folder', 'root': sys.argv[1], "
        "'folder': {'path': p, 'classes': 3, 'image_size': 16}}})\n"
        "    assert get_dataset('folder').problems(s.data) == [], p\n"
        "print('torch loaded' if 'torch' in sys.modules else 'no torch')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "no torch"
