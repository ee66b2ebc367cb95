"""The `fedgen` command: run, resume, partition, validate.

fedgen run SPEC [--out DIR] [--force] [--rounds N] [--threads N] [--json]
                                run a spec (or a sweep: a file with base + grid); prints
                                'final 70.42% @29 · best 71.02% @27 · top-5 … · 30 rounds · running time …'
fedgen resume DIR [--rounds N] [--threads N] [--json]
                                continue a run directory from its last full checkpoint
fedgen partition SPEC [--json]  print the per-user label histogram (--json: every user's
                                train and test indices, in the reference test vectors' layout)
fedgen validate SPEC            print the validated spec, or the errors
fedgen plugins [--json]         the installed plugins (algorithms, datasets): versions, errors
fedgen study list|show|run      the paper's experiments as studies (fedgen.study_cli)
fedgen export RUN_ID [-o FILE|-] [--force] [--api URL] [--token T]
                                a lab run's spec as YAML, with the command that reproduces it
                                here (fedgen.export)
fedgen submit|runs|follow|cancel|pull|push
                                a lab's runs through the public client: commands that other
                                packages add through the `fedgen.commands` entry points
                                (fedgen_lab.verbs), loaded only for a word not listed above

"final" and "best" mean one thing everywhere (docs/metrics.md, `fedgen.stats`): the
accuracy of the last model the run's protocol evaluates, and the highest over the same
rounds, each with its round named when it is not the run's last round.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from fedgen import durations
from fedgen.data.common import DatasetError  # torch-free: `validate` never loads torch
from fedgen.data.partition import PartitionError, build_partition, official_min_samples
from fedgen.data.registry import get_dataset
from fedgen.events import RoundEvent, RunInfo, RunSummary, SummaryStatus
from fedgen.execution_spec import with_new_run_defaults
from fedgen.fidelity import resolve
from fedgen.rundir import DirectorySink, clear_run, latest_full_checkpoint, run_files
from fedgen.spec import ExperimentSpec, SpecError, load_spec, load_spec_data, parse_spec
from fedgen.spec_base import MAX_ROUNDS
from fedgen.stats import format_acc
from fedgen.sweep import SweepSpec, expand

EXIT_INVALID = 2


class ProgressSink(DirectorySink):
    """A directory sink that also draws a one-line progress bar on stderr.

    The bar shows each round's test accuracy in %. Under eval_timing before_training the
    protocol never evaluates the model after the last aggregation (round R), so the bar's
    last round says it is not counted and names the round "final" is from (docs/metrics.md).
    """

    def __init__(self, root: Path, spec: ExperimentSpec, label: str) -> None:
        super().__init__(root, spec)
        self.label, self.rounds = label, spec.rounds
        self.before_training = resolve(spec).eval_timing == "before_training"
        self.t0 = time.perf_counter()
        self.first = 0
        self.tty = sys.stderr.isatty()

    def on_start(self, info: RunInfo) -> None:
        super().on_start(info)
        self.first, self.t0 = info.start_round, time.perf_counter()

    def on_round(self, event: RoundEvent) -> None:
        super().on_round(event)
        sys.stderr.write(self.line(event))
        sys.stderr.flush()

    def line(self, event: RoundEvent) -> str:
        """The progress line of one round (with its line ending: a tty redraws one line)."""
        r, done = event.round, event.round - self.first + 1
        elapsed = time.perf_counter() - self.t0
        eta = elapsed / done * (self.rounds - r) if done > 0 else 0.0
        width = 24
        filled = int(width * r / self.rounds)
        bar = "#" * filled + "." * (width - filled)
        acc = format_acc(event.metrics.get("test_acc"))
        line = (
            f"{self.label} [{bar}] round {r}/{self.rounds}  test acc {acc}"
            f"  {event.metrics.get('time_total_ms', 0.0):.0f} ms/round  ETA {eta:.0f}s"
        )
        if self.before_training and r == self.rounds:
            line += (
                f"  (round {r} not counted: eval_timing before_training never evaluates "
                f"the last model; final is @{r - 1})"
            )
        if self.tty:  # redraw in place; \x1b[K clears what a longer previous line left
            return "\r" + line + "\x1b[K" + ("\n" if r == self.rounds else "")
        return line + "\n"

    def on_finish(self, summary: RunSummary) -> None:
        super().on_finish(summary)
        if self.tty and summary.rounds_done < self.rounds:
            sys.stderr.write("\n")


def _print_errors(exc: SpecError) -> int:
    print(str(exc), file=sys.stderr)
    return EXIT_INVALID


def _json_line(root: Path, summary: RunSummary) -> str:
    """--json: the summary as one JSON object (accuracies as fractions, rounds as indices)."""
    return json.dumps({"out": str(root), **summary.to_dict()}, separators=(",", ":"))


def readable_summary(summary: RunSummary, rounds: int) -> str:
    """The run's end as people read it, in % with rounds named (docs/metrics.md).

    e.g. 'final 70.42% @29 · best 71.02% @27 · top-5 70.61 ± 0.35% · 30 rounds · running
    time 41.2 s'; `rounds` is the spec's R: a final or best round that is not R is named with
    '@'. The running time is fedgen.durations' (the runner's, from loading the data on).
    """
    text = summary.figures(rounds)
    done = (
        f"{summary.rounds_done} rounds"
        if summary.status == SummaryStatus.COMPLETED
        else f"stopped after {summary.rounds_done} of {rounds} rounds"
    )
    return f"{text} · {done} · {durations.RUNNING_TIME} {durations.format_s(summary.wall_s)}"


def _report(root: Path, summary: RunSummary, rounds: int, args: argparse.Namespace) -> None:
    line = _json_line(root, summary) if args.json else readable_summary(summary, rounds)
    print(line, flush=True)


def _run_one(
    spec: ExperimentSpec, root: Path, label: str, resume: Path | None = None
) -> RunSummary:
    from fedgen.runner import run  # torch-heavy import only when running

    sink = ProgressSink(root, spec, label)
    return run(spec, sink, resume_from=resume)


def _default_out(spec: ExperimentSpec) -> Path:
    return Path("runs") / f"{spec.algorithm.name}-{spec.spec_hash()}"


class OutExists(Exception):
    """--out names a folder that already holds a run, and --force was not given."""


def _finished(root: Path) -> bool:
    try:
        return bool(
            json.loads((root / "summary.json").read_text())["status"] == SummaryStatus.COMPLETED
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _claim_outs(roots: list[Path], force: bool, given: bool) -> None:
    """Refuse to write over existing run folders (all checked before any run starts);
    with --force, remove their run files (`clear_run`) first."""
    taken = [(root, found) for root in roots if (found := run_files(root))]
    if not taken:
        return
    if not force:
        root, found = taken[0]
        more = f" (and {len(taken) - 1} more run folders)" if len(taken) > 1 else ""
        finished = _finished(root)
        resume = "" if finished else f"continue it with `fedgen resume {root}`, "
        raise OutExists(
            f"--out: {root}{'' if given else ' (the default --out)'} already holds a "
            f"{'finished ' if finished else ''}run "
            f"({', '.join(found)}){more}; {resume}choose another --out, "
            "or pass --force to delete its run files and start afresh"
        )
    for root, _ in taken:
        clear_run(root)


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


def _rounds_arg(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"rounds must be an integer, got {value!r}") from None


def _with_rounds(data: Any, args: argparse.Namespace, sweep: bool) -> Any:
    """--rounds N replaces the spec's rounds (a sweep's base); the spec then validates it."""
    if args.rounds is None:
        return data
    if not isinstance(data, dict):
        return data  # parse_spec names what is wrong with a file that is not a mapping
    if not sweep:
        return {**data, "rounds": args.rounds}
    grid = data.get("grid")
    if isinstance(grid, dict) and "rounds" in grid:
        raise SpecError(
            [("--rounds", "the sweep's grid varies rounds; drop it from the grid or the option")],
            f"{args.spec} with --rounds {args.rounds}",
        )
    base = data.get("base")
    return {**data, "base": {**(base if isinstance(base, dict) else {}), "rounds": args.rounds}}


def _new_run_defaults(data: Any) -> Any:
    """`execution: auto` for a spec (or a sweep's base) that does not name one
    (`fedgen.execution_spec`: new runs default to auto, the schema stays sequential)."""
    if not isinstance(data, dict):
        return data
    if "grid" not in data and "base" not in data:
        return with_new_run_defaults(data)
    grid, base = data.get("grid"), data.get("base", {})
    if (isinstance(grid, dict) and "execution" in grid) or not isinstance(base, dict):
        return data
    return {**data, "base": with_new_run_defaults(base)}


def cmd_run(args: argparse.Namespace) -> int:
    _apply_threads(args)
    data: Any = _new_run_defaults(load_spec_data(args.spec))
    source = str(args.spec) if args.rounds is None else f"{args.spec} with --rounds {args.rounds}"
    if isinstance(data, dict) and ("grid" in data or "base" in data):
        sweep = SweepSpec.model_validate(_with_rounds(data, args, sweep=True))
        try:
            specs = expand(sweep)
        except SpecError as exc:  # name the file, and --rounds when it was given
            raise SpecError(exc.errors, source) from None
        out = Path(args.out or Path("runs") / sweep.name)
        roots = [
            out / f"{i:03d}-{spec.algorithm.name}-a{spec.partition.alpha:g}-s{spec.seed}"
            for i, spec in enumerate(specs)
        ]
        _claim_outs(roots, args.force, given=args.out is not None)
        for i, (spec, root) in enumerate(zip(specs, roots, strict=True)):
            label = f"[{i + 1}/{len(specs)}] {spec.algorithm.name}"
            summary = _run_one(spec, root, label)
            if not args.json:
                print(f"{label} seed {spec.seed}: ", end="")
            _report(root, summary, spec.rounds, args)
        print(f"results: {out}", flush=True)
        return 0
    spec = parse_spec(_with_rounds(data, args, sweep=False), source)
    root = Path(args.out) if args.out else _default_out(spec)
    _claim_outs([root], args.force, given=args.out is not None)
    summary = _run_one(spec, root, spec.algorithm.name)
    _report(root, summary, spec.rounds, args)
    if not args.json:
        print(f"results: {root}", flush=True)
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    _apply_threads(args)
    root = Path(args.dir)
    spec = load_spec(root / "spec.json")
    ckpt = latest_full_checkpoint(root)
    if args.rounds is not None:  # extend the run: from its last full checkpoint to round N
        source = f"{root / 'spec.json'} with --rounds {args.rounds}"
        at = int(ckpt.stem.split("-")[-1]) if ckpt is not None else 0
        if args.rounds < at:
            raise SpecError(
                [("--rounds", f"the run is checkpointed at round {at}; give >= {at}")], source
            )
        spec = parse_spec({**spec.model_dump(mode="json"), "rounds": args.rounds}, source)
    if ckpt is None:
        print(
            f"no full checkpoint under {root}/checkpoints; starting from round 0", file=sys.stderr
        )
    summary = _run_one(spec, root, spec.algorithm.name, resume=ckpt)
    _report(root, summary, spec.rounds, args)
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


def _check_files(spec: ExperimentSpec, source: str) -> None:
    """The files the spec's dataset points to, on this host (the `folder` dataset's: missing
    folder, wrong shape, wrong class count), as spec errors; without loading torch."""
    problems = get_dataset(spec.data.name).problems(spec.data)
    if problems:
        raise SpecError(problems, source)


def cmd_validate(args: argparse.Namespace) -> int:
    data = load_spec_data(args.spec)
    if isinstance(data, dict) and ("grid" in data or "base" in data):
        specs = expand(SweepSpec.model_validate(data))
        for spec in specs:
            _check_files(spec, str(args.spec))
        print(f"valid sweep: {len(specs)} runs")
        return 0
    spec = parse_spec(data, str(args.spec))
    _check_files(spec, str(args.spec))
    print(yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False), end="")
    print(f"# spec_hash: {spec.spec_hash()}")
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    from fedgen import plugins

    records = plugins.load()
    if args.json:
        print(json.dumps([{**dataclasses.asdict(r), "ok": r.ok} for r in records]))
    else:
        print(plugins.table(records))
    return 1 if any(not r.ok for r in records) else 0


_Subparsers = argparse._SubParsersAction  # what add_subparsers returns

JSON_HELP = (
    "print the summary as one JSON line (accuracies as fractions) instead of the "
    "readable 'final … · best … · top-5 …' line"
)


# Commands other packages add to `fedgen` (the lab client's submit, runs, follow, pull, push
# and cancel): entry points in this group name a function `add_parsers(subparsers)`. The
# library imports none of them; they stand on it.
COMMANDS_GROUP = "fedgen.commands"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `fedgen` command line: run, resume, partition, validate, plugins, study, export, and
    the `fedgen.commands` entry points' commands unless `command` is one of those (so
    `fedgen run` never imports the lab client)."""
    p = argparse.ArgumentParser(
        prog="fedgen", description="Federated learning simulations: FedGen and baselines."
    )
    sub = p.add_subparsers(dest="command", required=True)
    _add_run_commands(sub)
    _add_spec_commands(sub)
    from fedgen import export, study_cli

    study_cli.add_parser(sub)
    export.add_parser(sub)
    if command not in sub.choices:
        _add_entry_point_commands(sub)
    return p


def _add_entry_point_commands(sub: _Subparsers[argparse.ArgumentParser]) -> None:
    from importlib import metadata

    for entry in metadata.entry_points(group=COMMANDS_GROUP):
        try:
            entry.load()(sub)
        except Exception as exc:  # one broken package never takes the built-in commands down
            why = f"{type(exc).__name__}: {exc}"
            print(f"warning: commands of {entry.value} not loaded ({why})", file=sys.stderr)


def _command_word(argv: list[str]) -> str | None:
    """The command `argv` names (its first word that is not an option), if any."""
    return next((a for a in argv if not a.startswith("-")), None)


def _add_run_commands(sub: _Subparsers[argparse.ArgumentParser]) -> None:
    """`run` and `resume`: the commands that train, sharing --threads and --json."""
    threads = argparse.ArgumentParser(add_help=False)  # shared by run and resume
    threads.add_argument(
        "--threads",
        type=_threads_arg,
        default=None,
        help="torch CPU threads (intra- and inter-op; default: torch's default, all cores); "
        "use 1 when several runs share the machine",
    )
    r = sub.add_parser("run", parents=[threads], help="run a spec or a sweep")
    r.add_argument("spec", help="YAML or JSON spec (or sweep: base + grid)")
    r.add_argument(
        "--out",
        help="output directory (default runs/<algorithm>-<spec hash>; a sweep: runs/<name>, "
        "one folder per run); a folder that already holds a run is refused unless --force",
    )
    r.add_argument(
        "--force",
        action="store_true",
        help="write over an existing run folder: its run files (spec.json, info.json, "
        "metrics.jsonl, summary.json, checkpoints/) are deleted first; other files are kept",
    )
    r.add_argument(
        "--rounds",
        type=_rounds_arg,
        metavar="N",
        help=f"rounds to run, replacing the spec's (a sweep's base) rounds; 1..{MAX_ROUNDS}",
    )
    r.add_argument("--json", action="store_true", help=JSON_HELP)
    r.set_defaults(func=cmd_run)
    s = sub.add_parser(
        "resume", parents=[threads], help="continue a run directory from its last full checkpoint"
    )
    s.add_argument("dir")
    s.add_argument(
        "--rounds",
        type=_rounds_arg,
        metavar="N",
        help="run to round N instead of the spec's rounds (extends a finished run, e.g. one "
        "`fedgen pull` wrote); spec.json is rewritten with it",
    )
    s.add_argument("--json", action="store_true", help=JSON_HELP)
    s.set_defaults(func=cmd_resume)


def _add_spec_commands(sub: _Subparsers[argparse.ArgumentParser]) -> None:
    """`partition`, `validate` and `plugins`: the commands that inspect without training."""
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
    pl = sub.add_parser(
        "plugins",
        help="list the installed plugins (entry points fedgen.algorithms, fedgen.datasets) with "
        "their distributions, versions and errors; exit code 1 when one failed to load",
    )
    pl.add_argument("--json", action="store_true", help="one JSON list instead of the table")
    pl.set_defaults(func=cmd_plugins)


def main(argv: list[str] | None = None) -> int:
    from pydantic import ValidationError

    words = sys.argv[1:] if argv is None else argv
    args = build_parser(_command_word(words)).parse_args(words)
    if args.command != "plugins":  # that one lists them itself
        from fedgen import plugins

        plugins.announce()  # a plugin that fails to load: one stderr line, built-ins unaffected
    try:
        code: int = args.func(args)
        return code
    except SpecError as exc:
        return _print_errors(exc)
    except ValidationError as exc:  # sweep envelope
        from fedgen.spec import format_validation_error

        return _print_errors(SpecError(format_validation_error(exc), "sweep"))
    except OutExists as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except (DatasetError, PartitionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted; continue with `fedgen resume DIR`", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
