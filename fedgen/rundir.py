"""A run directory on disk: spec.json, info.json, metrics.jsonl, checkpoints/, summary.json.

`DirectorySink` is the sink the CLI uses; `latest_full_checkpoint` finds where a
stopped run can resume; `run_files` says whether a folder already holds a run (the CLI
refuses to write over one unless told to) and `clear_run` removes those files. metrics.jsonl holds one JSON object per round; on resume
the lines past the checkpoint's round are dropped first, so a round is never
written twice.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fedgen import checkpoint
from fedgen.events import RoundEvent, RunInfo, RunSummary
from fedgen.spec import ExperimentSpec

# What a run writes into its folder: the files that make a folder "a run folder".
RUN_FILES = ("spec.json", "info.json", "metrics.jsonl", "summary.json", "checkpoints")


def run_files(root: Path) -> list[str]:
    """The run files already under `root` (empty if it is not a run folder or does not exist)."""
    return [name for name in RUN_FILES if (root / name).exists()]


def clear_run(root: Path) -> None:
    """Remove a run's own files from `root` (RUN_FILES); any other file there is left alone."""
    for name in RUN_FILES:
        path = root / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


class DirectorySink:
    """Writes a run's events, checkpoints and summary under `root`."""

    def __init__(self, root: Path, spec: ExperimentSpec) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "spec.json").write_text(
            json.dumps(spec.model_dump(mode="json"), indent=2) + "\n"
        )
        self.metrics_path = self.root / "metrics.jsonl"

    def on_start(self, info: RunInfo) -> None:
        (self.root / "info.json").write_text(json.dumps(info.to_dict(), indent=2) + "\n")
        self._truncate_after(info.start_round - 1)

    def _truncate_after(self, last_round: int) -> None:
        if not self.metrics_path.exists():
            return
        kept = [
            line
            for line in self.metrics_path.read_text().splitlines()
            if line.strip() and json.loads(line)["round"] <= last_round
        ]
        self.metrics_path.write_text("".join(line + "\n" for line in kept))

    def on_round(self, event: RoundEvent) -> None:
        # Checkpoint files first: a metrics line always has its checkpoint on disk.
        for ck in event.checkpoints:
            name = f"{ck.kind}-{ck.round:05d}.pt"
            checkpoint.write_atomic(self.root / "checkpoints" / name, ck.data)
        with self.metrics_path.open("a") as fh:
            fh.write(json.dumps(event.to_dict(), separators=(",", ":")) + "\n")

    def on_finish(self, summary: RunSummary) -> None:
        (self.root / "summary.json").write_text(json.dumps(summary.to_dict(), indent=2) + "\n")


def latest_full_checkpoint(root: Path) -> Path | None:
    """The newest 'full' checkpoint of a run directory, or None."""
    found = sorted((root / "checkpoints").glob("full-*.pt"))
    return found[-1] if found else None
