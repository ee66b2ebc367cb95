"""The `fedgen` command: run, resume, partition, validate, as a user types them."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from fedgen.cli import main

TINY = {
    "data": {"name": "synthetic", "synthetic_samples": 600, "synthetic_classes": 4},
    "partition": {"num_users": 4, "alpha": 1.0},
    "users_per_round": 2,
    "rounds": 4,
    "local_steps": 3,
    "batch_size": 16,
    "checkpoint_every": 2,
}


def _write(tmp_path: Path, data: object, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _rounds(out: Path) -> list[int]:
    return [json.loads(line)["round"] for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_run_writes_metrics_checkpoints_and_summary(tmp_path, capsys) -> None:
    """`fedgen run SPEC --out DIR` writes one JSON line per round and prints a summary line."""
    out = tmp_path / "run"
    assert main(["run", str(_write(tmp_path, TINY)), "--out", str(out)]) == 0
    assert _rounds(out) == [0, 1, 2, 3, 4]
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        "full-00002.pt",
        "full-00004.pt",
        "model-00004.pt",
    ]
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["status"] == "completed"
    assert summary["rounds_done"] == 4


def test_resume_continues_without_duplicating_rounds(tmp_path) -> None:
    """`fedgen resume DIR` continues from the last full checkpoint; rounds are not repeated."""
    out = tmp_path / "run"
    main(["run", str(_write(tmp_path, TINY)), "--out", str(out)])
    whole = (out / "metrics.jsonl").read_text().splitlines()
    (out / "checkpoints" / "full-00004.pt").unlink()  # pretend the run died after round 3
    assert main(["resume", str(out)]) == 0
    again = (out / "metrics.jsonl").read_text().splitlines()
    assert _rounds(out) == [0, 1, 2, 3, 4]

    def strip(line: str) -> dict[str, float]:
        return {k: v for k, v in json.loads(line)["metrics"].items() if not k.startswith("time_")}

    assert [strip(x) for x in again] == [strip(x) for x in whole]


def test_sweep_file_runs_every_combination(tmp_path, capsys) -> None:
    """A file with base + grid runs each expanded spec into its own folder."""
    sweep = {"name": "s", "base": {**TINY, "rounds": 1}, "grid": {"seed": [0, 1]}}
    assert main(["run", str(_write(tmp_path, sweep)), "--out", str(tmp_path / "sw")]) == 0
    assert len(list((tmp_path / "sw").iterdir())) == 2
    assert "results:" in capsys.readouterr().out


def test_validate_prints_spec_or_errors(tmp_path, capsys) -> None:
    """validate prints the full spec, or exits 2 with field errors."""
    assert main(["validate", str(_write(tmp_path, TINY))]) == 0
    assert "spec_hash" in capsys.readouterr().out
    bad = _write(tmp_path, {**TINY, "batch_size": 10**9, "colour": "red"}, "bad.yaml")
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "batch_size" in err
    assert "4096" in err
    assert "colour: unknown field" in err


def test_partition_prints_histogram(tmp_path, capsys) -> None:
    """partition prints one row per user and the fingerprint."""
    assert main(["partition", str(_write(tmp_path, TINY))]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[0] == "user"
    assert len(out) == 1 + 4 + 1 + 1
    assert out[-1].startswith("fingerprint ")


def test_missing_data_is_a_clear_error(tmp_path, capsys) -> None:
    """A dataset that is not there gives one message naming the folder, not a traceback."""
    spec = {**TINY, "data": {"name": "mnist", "root": str(tmp_path / "nowhere")}}
    assert main(["run", str(_write(tmp_path, spec)), "--out", str(tmp_path / "o")]) == 1
    assert "nowhere" in capsys.readouterr().err
