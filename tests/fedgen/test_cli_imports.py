"""`fedgen validate` and the spec/partition modules load without torch (issue 12 §4: start-up)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # child interpreters

ROOT = Path(__file__).resolve().parents[2]

SPEC = {
    "data": {"name": "synthetic", "synthetic_samples": 600, "synthetic_classes": 4},
    "partition": {"num_users": 4, "alpha": 1.0},
    "users_per_round": 2,
    "rounds": 2,
    "local_steps": 3,
    "batch_size": 16,
}


def _fresh_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_validate_does_not_import_torch(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    code = (
        "import sys\n"
        "from fedgen.cli import main\n"
        "rc = main(['validate', sys.argv[1]])\n"
        "print('torch loaded' if 'torch' in sys.modules else 'no torch')\n"
        "sys.exit(rc)\n"
    )
    proc = _fresh_python(code, str(spec))
    assert proc.returncode == 0, proc.stderr
    assert "# spec_hash:" in proc.stdout
    assert proc.stdout.strip().endswith("no torch")


def test_light_data_modules_load_no_torch() -> None:
    """The split and the dataset registry import without torch; loading data brings it."""
    code = (
        "import sys\n"
        "import fedgen.data, fedgen.data.common, fedgen.data.partition, fedgen.data.registry\n"
        "assert 'torch' not in sys.modules, 'a light data module pulled in torch'\n"
        "from fedgen.data.datasets import load_dataset\n"
        "assert 'torch' in sys.modules and callable(load_dataset)\n"
        "print('ok')\n"
    )
    proc = _fresh_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
