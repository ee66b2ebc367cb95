"""The `fedgen` command: run, resume, partition, validate.

fedgen run SPEC [--out DIR] [--threads N]
                                run a spec (or a sweep: a file with base + grid)
fedgen resume DIR [--threads N] continue a run directory from its last full checkpoint
fedgen partition SPEC [--json]  print the per-user label histogram (--json: every user's
                                train and test indices, in the reference test vectors' layout)
fedgen validate SPEC            print the validated spec, or the errors
fedgen study list|show|run      the paper's experiments as studies (fedgen.study_cli)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from fedgen.data.common import DatasetError  # torch-free: `validate` never loads torch
from fedgen.data.partition import PartitionError, build_partition, official_min_samples
from fedgen.events import RoundEvent, RunInfo, RunSummary
from fedgen.fidelity import resolve
from fedgen.rundir import DirectorySink, latest_full_checkpoint
from fedgen.spec import ExperimentSpec, SpecError, load_spec, load_spec_data, parse_spec
from fedgen.sweep import SweepSpec, expand

EXIT_INVALID = 2


class ProgressSink(DirectorySink):
    """A directory sink that also draws a one-line progress bar on stderr."""

    def __init__(self, root: Path, spec: ExperimentSpec, label: str) -> None:
        super().__init__(root, spec)
        self.label, self.rounds = label, spec.rounds
        self.t0 = time.perf_counter()
        self.first = 0
        self.tty = sys.stderr.isatty()

    def on_start(self, info: RunInfo) -> None:
        super().on_start(info)
        self.first, self.t0 = info.start_round, time.perf_counter()

    def on_round(self, event: RoundEvent) -> None:
        super().on_round(event)
        r, done = event.round, event.round - self.first + 1
        elapsed = time.perf_counter() - self.t0
        eta = elapsed / done * (self.rounds - r) if done > 0 else 0.0
        width = 24
        filled = int(width * r / self.rounds)
        bar = "#" * filled + "." * (width - filled)
        line = (
            f"{self.label} [{bar}] round {r}/{self.rounds}  acc {event.metrics['test_acc']:.4f}"
            f"  {event.metrics.get('time_total_ms', 0.0):.0f} ms/round  ETA {eta:.0f}s"
        )
        if self.tty:
            sys.stderr.write("\r" + line + ("\n" if r == self.rounds else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def on_finish(self, summary: RunSummary) -> None:
        super().on_finish(summary)
        if self.tty:
            sys.stderr.write("\n")


def _print_errors(exc: SpecError) -> int:
    print(str(exc), file=sys.stderr)
    return EXIT_INVALID


def _summary_line(root: Path, summary: RunSummary) -> str:
    return json.dumps({"out": str(root), **summary.to_dict()}, separators=(",", ":"))


def _run_one(
    spec: ExperimentSpec, root: Path, label: str, resume: Path | None = None
) -> RunSummary:
    from fedgen.runner import run  # torch-heavy import only when running

    sink = ProgressSink(root, spec, label)
    return run(spec, sink, resume_from=resume)


def _default_out(spec: ExperimentSpec) -> Path:
    return Path("runs") / f"{spec.algorithm.name}-{spec.spec_hash()}"


def _apply_threads(args: argparse.Namespace) -> None:
    """--threads: torch's intra- and inter-op threads, set before anything runs."""
    if args.threads is not None:
        from fedgen.threads import set_threads

        set_threads(args.threads)


def _threads_arg(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"threads must be an integer >= 1, got {value!r}"
        ) from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"threads must be an integer >= 1, got {n}")
    return n


def cmd_run(args: argparse.Namespace) -> int:
    _apply_threads(args)
    data: Any = load_spec_data(args.spec)
    if isinstance(data, dict) and ("grid" in data or "base" in data):
        sweep = SweepSpec.model_validate(data)
        specs = expand(sweep)
        out = Path(args.out or Path("runs") / sweep.name)
        for i, spec in enumerate(specs):
            root = out / f"{i:03d}-{spec.algorithm.name}-a{spec.partition.alpha:g}-s{spec.seed}"
            summary = _run_one(spec, root, f"[{i + 1}/{len(specs)}] {spec.algorithm.name}")
            print(_summary_line(root, summary), flush=True)
        print(f"results: {out}", flush=True)
        return 0
    spec = parse_spec(data, str(args.spec))
    root = Path(args.out) if args.out else _default_out(spec)
    summary = _run_one(spec, root, spec.algorithm.name)
    print(_summary_line(root, summary), flush=True)
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    _apply_threads(args)
    root = Path(args.dir)
    spec = load_spec(root / "spec.json")
    ckpt = latest_full_checkpoint(root)
    if ckpt is None:
        print(
            f"no full checkpoint under {root}/checkpoints; starting from round 0", file=sys.stderr
        )
    summary = _run_one(spec, root, spec.algorithm.name, resume=ckpt)
    print(_summary_line(root, summary), flush=True)
    return 0


def cmd_partition(args: argparse.Namespace) -> int:
    from fedgen.data.datasets import load_dataset  # torch-heavy import only when loading data
    from fedgen.data.split_export import split_document

    spec = load_spec(args.spec)
    p = spec.partition
    ds = load_dataset(spec.data, p)
    draws = resolve(spec).draws
    part = build_partition(ds, p, draws)
    if args.json:
        doc = split_document(
            ds,
            part,
            alpha=p.alpha,
            sampling_ratio=p.sampling_ratio,
            min_samples=official_min_samples(ds.name, ds.num_classes)
            if p.min_samples is None
            else p.min_samples,
            data_seed=p.data_seed,
            draws=None if ds.train_groups is not None else draws,
        )
        print(json.dumps(doc, separators=(",", ":")))
        return 0
    hist = part.label_histogram(ds.train_y.numpy())
    labels = "".join(f"{c:>6}" for c in range(hist.shape[1]))
    print(f"{'user':>5}{labels}{'train':>8}{'test':>7}")
    for k, row in enumerate(hist):
        cells = "".join(f"{int(v):>6}" for v in row)
        print(f"{k:>5}{cells}{int(row.sum()):>8}{len(part.test_indices[k]):>7}")
    total = hist.sum(0)
    print(f"{'all':>5}{''.join(f'{int(v):>6}' for v in total)}{int(total.sum()):>8}")
    print(f"fingerprint {part.fingerprint()}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    data = load_spec_data(args.spec)
    if isinstance(data, dict) and ("grid" in data or "base" in data):
        specs = expand(SweepSpec.model_validate(data))
        print(f"valid sweep: {len(specs)} runs")
        return 0
    spec = parse_spec(data, str(args.spec))
    print(yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False), end="")
    print(f"# spec_hash: {spec.spec_hash()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    threads = argparse.ArgumentParser(add_help=False)  # shared by run and resume
    threads.add_argument(
        "--threads",
        type=_threads_arg,
        default=None,
        help="torch CPU threads (intra- and inter-op; default: torch's default, all cores); "
        "use 1 when several runs share the machine",
    )
    p = argparse.ArgumentParser(
        prog="fedgen", description="Federated learning simulations: FedGen and baselines."
    )
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", parents=[threads], help="run a spec or a sweep")
    r.add_argument("spec", help="YAML or JSON spec (or sweep: base + grid)")
    r.add_argument("--out", help="output directory (default runs/<algorithm>-<spec hash>)")
    r.set_defaults(func=cmd_run)
    s = sub.add_parser(
        "resume", parents=[threads], help="continue a run directory from its last full checkpoint"
    )
    s.add_argument("dir")
    s.set_defaults(func=cmd_resume)
    pa = sub.add_parser("partition", help="print the per-user label histogram of a spec's split")
    pa.add_argument("spec")
    pa.add_argument(
        "--json",
        action="store_true",
        help="print every user's train/test indices and label histograms as JSON",
    )
    pa.set_defaults(func=cmd_partition)
    v = sub.add_parser("validate", help="validate a spec and print it with every default")
    v.add_argument("spec")
    v.set_defaults(func=cmd_validate)
    from fedgen import study_cli

    study_cli.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    from pydantic import ValidationError

    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except SpecError as exc:
        return _print_errors(exc)
    except ValidationError as exc:  # sweep envelope
        from fedgen.spec import format_validation_error

        return _print_errors(SpecError(format_validation_error(exc), "sweep"))
    except (DatasetError, PartitionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted; continue with `fedgen resume DIR`", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
