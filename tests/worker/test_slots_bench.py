"""bench/gpu.py off a GPU: it says it found no CUDA and exits 0; --smoke runs its paths on CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gpu.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    # No GPU visible even where one exists: the no-CUDA path is what is tested.
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )


@pytest.mark.slow
def test_gpu_bench_without_cuda_says_so_and_exits_0() -> None:
    """No CUDA: one line saying so, exit code 0, nothing measured."""
    done = _run()
    assert done.returncode == 0, done.stderr
    assert "no CUDA found" in done.stdout
    assert "runs/hour" not in done.stdout


@pytest.mark.slow
def test_gpu_bench_smoke_runs_every_path_on_cpu() -> None:
    """--smoke: both algorithms, the CPU comparison and K runs at once, on device cpu."""
    done = _run("--smoke")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "device cpu" in out
    assert "fedavg: device vs cpu, first 2 rounds: agree" in out
    assert "fedgen: device vs cpu, first 2 rounds: agree" in out
    assert "K=1:" in out
    assert "K=2:" in out
    assert "all runs succeeded" in out
