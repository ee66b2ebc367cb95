"""A lab run written as a local run folder, exactly as `fedgen run` writes one (fedgen.rundir):
spec.json, info.json, metrics.jsonl (one line per round with its per-user rows), summary.json
(once the run has ended with one) and checkpoints/<kind>-<round>.pt, so `fedgen resume DIR`
continues it and every local tool reads it."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Literal, Protocol

import pandas as pd

from fedgen.events import RunInfo
from fedgen.rundir import run_files
from fedgen.spec import parse_spec
from fedgen_lab.errors import LabError
from vocab.schemas.checkpoints import CheckpointPublic
from vocab.schemas.runs import RunInfoPublic


class Run(Protocol):
    """What a pull reads of a lab run (`fedgen_lab.lab.Run`, which imports this module)."""

    @property
    def id(self) -> str: ...
    @property
    def spec(self) -> dict[str, Any]: ...
    @property
    def summary(self) -> dict[str, Any] | None: ...
    @property
    def info(self) -> RunInfoPublic: ...
    def refresh(self) -> Any: ...
    def metrics(self, since_round: int | None = None) -> pd.DataFrame: ...
    def users(self, round_from: int | None = None, round_to: int | None = None) -> pd.DataFrame: ...
    def checkpoints(self) -> list[CheckpointPublic]: ...
    def download_checkpoint(
        self,
        checkpoint: CheckpointPublic | str | None = None,
        *,
        kind: str = "model",
        round: int | None = None,  # noqa: A002 - the checkpoint's round, as the API names it
        path: str | Path | None = None,
    ) -> bytes: ...


Checkpoints = Literal["none", "final", "all"]
CHECKPOINT_CHOICES: tuple[Checkpoints, ...] = ("none", "final", "all")


def _info(run: Run) -> dict[str, Any]:
    """info.json: the RunInfo the run's (latest) segment started with."""
    info = run.info
    if info.pending or info.partition_fingerprint is None:
        raise LabError(f"run {run.id} has not started: nothing to pull yet")
    return RunInfo(
        spec_hash=info.spec_hash,
        partition_fingerprint=info.partition_fingerprint,
        num_users=len(info.train_sizes or []),
        num_classes=int(info.num_classes or 0),
        train_sizes=list(info.train_sizes or []),
        test_sizes=list(info.test_sizes or []),
        label_histogram=[list(r) for r in info.label_histogram or []],
        model_params=int(info.model_params or 0),
        device=info.device,
        fidelity=dict(info.fidelity or {}),
        start_round=int(info.start_round or 0),
        versions={k: str(v) for k, v in info.versions.items()},
        data_files=[f.model_dump() for f in info.data_files],
        execution=info.execution or "sequential",
        execution_reason=info.execution_reason or "",
        batch_clients=info.batch_clients,
    ).to_dict()


def _metric_lines(run: Run) -> list[str]:
    """metrics.jsonl's lines: each stored round's metrics and its users' rows."""
    metrics = run.metrics()
    users = run.users()
    by_round: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in users.to_dict("records"):
        by_round[int(row["round"])].append(
            {
                "user": int(row["user"]),
                "test_acc": float(row["test_acc"]),
                "test_loss": float(row["test_loss"]),
                "num_test": int(row["num_test"]),
                "selected": bool(row["selected"]),
                "train_ms": None if row["train_ms"] != row["train_ms"] else row["train_ms"],
                "train_loss": None if row["train_loss"] != row["train_loss"] else row["train_loss"],
            }
        )
    lines = []
    for row in metrics.to_dict("records"):
        r = int(row.pop("round"))
        kept = {k: float(v) for k, v in row.items() if v == v and v is not None}  # NaN: absent
        users_of = sorted(by_round.get(r, []), key=lambda u: u["user"])
        body = {"round": r, "metrics": kept, "users": users_of}
        lines.append(json.dumps(body, separators=(",", ":")) + "\n")
    return lines


def pull(run: Run, out: Path, checkpoints: Checkpoints = "final", force: bool = False) -> Path:
    """Write `run` as a local run folder under `out`; the checkpoints kept: none, the last
    round's (`final`: what `fedgen resume` continues from, and the final model) or all."""
    if checkpoints not in CHECKPOINT_CHOICES:
        raise LabError(f"checkpoints {checkpoints!r}: one of {', '.join(CHECKPOINT_CHOICES)}")
    found = run_files(out)
    if found and not force:
        raise LabError(f"{out} already holds a run ({', '.join(found)}); pass force to replace")
    run.refresh()
    spec = parse_spec(run.spec)
    info = _info(run)
    lines = _metric_lines(run)
    out.mkdir(parents=True, exist_ok=True)
    (out / "spec.json").write_text(json.dumps(spec.model_dump(mode="json"), indent=2) + "\n")
    (out / "info.json").write_text(json.dumps(info, indent=2) + "\n")
    (out / "metrics.jsonl").write_text("".join(lines))
    summary = out / "summary.json"
    if run.summary is not None:
        summary.write_text(json.dumps(run.summary, indent=2) + "\n")
    elif summary.exists():
        summary.unlink()
    stored = run.checkpoints()
    if checkpoints == "final" and stored:
        last = (
            max(c.round for c in stored if c.kind == "full")
            if any(c.kind == "full" for c in stored)
            else max(c.round for c in stored)
        )
        stored = [c for c in stored if c.round == last]
    for ck in stored if checkpoints != "none" else []:
        run.download_checkpoint(ck, path=out / "checkpoints" / f"{ck.kind}-{ck.round:05d}.pt")
    return out


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinity as None (JSON has no NaN; the lab stores null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def push_body(
    root: Path, tags: list[str], checkpoints: Checkpoints = "final", host: str | None = None
) -> dict[str, Any]:
    """The POST /runs/push body of a local run folder: its spec, info, every round with its
    users, its summary and its checkpoints (the last round's, or all; none: the final model
    alone, which the lab requires), with this host's name."""
    import base64
    import hashlib
    import socket

    missing = [
        n
        for n in ("spec.json", "info.json", "metrics.jsonl", "summary.json")
        if not (root / n).is_file()
    ]
    if missing:
        raise LabError(f"{root} is not a finished run folder: no {', '.join(missing)}")
    spec = json.loads((root / "spec.json").read_text())
    rounds = [
        json.loads(line)
        for line in (root / "metrics.jsonl").read_text().splitlines()
        if line.strip()
    ]
    files = sorted((root / "checkpoints").glob("*-*.pt")) if (root / "checkpoints").is_dir() else []
    parsed = []
    for path in files:
        kind, _, number = path.stem.rpartition("-")
        if kind in ("full", "model", "generator") and number.isdigit():
            parsed.append((kind, int(number), path))
    last = int(spec.get("rounds", 0))
    if checkpoints == "none":
        parsed = [p for p in parsed if p[0] == "model" and p[1] == last]
    elif checkpoints == "final":
        parsed = [p for p in parsed if p[1] == last]
    chosen = []
    for kind, at, path in parsed:
        data = path.read_bytes()
        chosen.append(
            {
                "kind": kind,
                "round": at,
                "sha256": hashlib.sha256(data).hexdigest(),
                "data": base64.b64encode(data).decode("ascii"),
            }
        )
    return {
        "spec": spec,
        "info": json.loads((root / "info.json").read_text()),
        "rounds": _finite(rounds),
        "summary": _finite(json.loads((root / "summary.json").read_text())),
        "checkpoints": chosen,
        "host": host if host is not None else socket.gethostname(),
        "tags": tags,
    }
