"""`fedgen run --threads`: torch's threads set before the run and recorded with it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SPEC = {
    "data": {"name": "synthetic", "synthetic_samples": 400},
    "partition": {"num_users": 3},
    "users_per_round": 2,
    "rounds": 2,
    "local_steps": 2,
}


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
def test_fedgen_run_threads_is_recorded(tmp_path: Path, threads: int) -> None:
    """The run succeeds and its info.json records the thread count it ran with."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fedgen",
            "run",
            str(spec),
            "--out",
            str(out),
            "--threads",
            str(threads),
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["status"] == "completed"
    info = json.loads((out / "info.json").read_text())
    assert info["versions"]["torch_threads"] == str(threads)


@pytest.mark.slow  # a child process
@pytest.mark.parametrize("bad", ["0", "two"])
def test_fedgen_run_bad_threads_names_the_flag(tmp_path: Path, bad: str) -> None:
    """--threads below 1 or not a number: a usage error naming threads, no traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "fedgen", "run", "x.yaml", "--threads", bad],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "threads must be an integer >= 1" in done.stderr
    assert "Traceback" not in done.stderr
