"""`fedgen-lab worker` is the worker's own start (`python -m worker`, worker/main.py): the same
flags, help, output and exit codes, run in the command's own process."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from admin.cli import build_parser
from worker import main as worker_main

ROOT = Path(__file__).resolve().parents[2]


def _worker_subparser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices["worker"]
    assert isinstance(parser, argparse.ArgumentParser)
    return parser


def test_the_same_flags_and_help() -> None:
    admin, own = _worker_subparser(), worker_main.build_parser()
    assert admin.format_help() == own.format_help()
    assert admin.get_default("fn") is own.get_default("fn") is worker_main.run_worker


def test_the_admin_door_runs_the_worker_in_its_own_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`fedgen-lab worker FLAGS` hands run_worker the namespace `python -m worker FLAGS` gets."""
    from admin.cli import main

    seen: list[argparse.Namespace] = []
    flags = ["--slots", "2", "--threads", "1", "--queues", "gpu", "--quiet", "--embedded"]
    monkeypatch.setattr(worker_main, "run_worker", lambda a: seen.append(a) or 0)
    # The parsers hold the function they were built with: build them after the patch.
    assert main(["worker", *flags]) == 0
    assert worker_main.main(flags) == 0
    [through_admin, own] = seen
    assert vars(through_admin) | {"command": None} == vars(own) | {"command": None}


@pytest.mark.parametrize("flags", [["--slots", "0"], ["--slots", "x"], ["--pool", "forks"]])
def test_the_same_errors_and_exit_codes(flags: list[str]) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    runs = [
        subprocess.run(
            [sys.executable, "-m", *door, *flags],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=120,
            check=False,
        )
        for door in (["admin", "worker"], ["worker"])
    ]
    assert runs[0].returncode == runs[1].returncode == 2
    assert runs[0].stderr == runs[1].stderr
    assert runs[0].stdout == runs[1].stdout == ""
