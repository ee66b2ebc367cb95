"""`fedgen study list | show NAME | run NAME`: the paper's experiments from the command line.

fedgen study list                      name, what it reproduces, runs, estimated CPU time
fedgen study show NAME [overrides]     the sweep (base + grid) and the paper's table
fedgen study run NAME [overrides] [--jobs J] [--out DIR]
                                       run the sweep locally (J processes, one torch thread
                                       each), a line per finished run ('completed · final
                                       70.42% @199 · best … · top-5 …', docs/metrics.md),
                                       then the study's table with verdicts; runs that
                                       differ only in the test protocol share one training
                                       (`fedgen.runner.run_twins`), each still in its own
                                       run directory

Overrides: --dataset D, --seeds N (seeds 0..N-1), --rounds R; the paper's original by
default. `run` keeps finished runs: run it again with the same --out to resume a study.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from itertools import chain
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from fedgen.cost import COST_METRICS, run_cost
from fedgen.data.registry import dataset_names
from fedgen.events import RunSummary, SummaryStatus
from fedgen.protocol_twins import twin_groups
from fedgen.spec import (
    ExperimentSpec,
    SpecError,
    format_validation_error,
    parse_spec,
)
from fedgen.studies.costs import format_duration
from fedgen.studies.registry import STUDIES, Plan, StudyOverrides, UnknownStudy, plan
from fedgen.studies.verdicts import RunResult, paper_markdown, study_table

EXIT_INVALID = 2


def _overrides(args: argparse.Namespace) -> StudyOverrides:
    try:
        return StudyOverrides(dataset=args.dataset, seeds=args.seeds, rounds=args.rounds)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc), "study overrides") from None


def _plan(args: argparse.Namespace) -> Plan:
    return plan(args.name, _overrides(args))


def cmd_list(_args: argparse.Namespace) -> int:
    """One line per study with the paper's defaults."""
    rows = [plan(name) for name in STUDIES]
    width = max(len(n) for n in STUDIES)
    print(f"{'study':<{width}}  {'dataset':<14} {'runs':>4}  {'est. CPU':>8}  reproduces")
    for p in rows:
        print(
            f"{p.study.name:<{width}}  {p.dataset:<14} {p.runs:>4}  "
            f"{format_duration(p.est_local_cpu_s):>8}  {p.study.title}"
        )
    print(
        "\nest. CPU: one core, the paper's 200 rounds and each study's seeds; an estimate from measured "
        "per-algorithm round times (the machine's speed varies); divide by --jobs for wall time. "
        "Runs that differ only in the test protocol share one training and count once."
    )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """The study's definition, its sweep and the paper's numbers."""
    p = _plan(args)
    s = p.study
    print(f"{s.name} v{s.version}: {s.title}\n")
    print(s.describe(p.dataset))
    print(f"\nstatistic: {s.statistic_text}")
    for note in s.notes:
        print(f"note: {note}")
    print(
        f"\ndataset {p.dataset} (paper: {s.paper_dataset}), {p.seeds} seeds, {p.rounds} rounds: "
        f"{p.runs} runs in {len(twin_groups(p.specs))} trainings, est. CPU "
        f"{format_duration(p.est_local_cpu_s)} on one core (estimate)\n"
    )
    print("sweep:")
    sweep = {"name": p.sweep.name, "base": p.sweep.base, "grid": p.sweep.grid}
    print(yaml.safe_dump(sweep, sort_keys=False, allow_unicode=True), end="")
    unit = "ms per local update" if s.statistic == "ms_per_update" else "accuracy %"
    print(f"\nthe paper's table ({unit}; '–': no paper number for this cell):\n")
    print(paper_markdown(p.layout), end="")
    return 0


def _run_dir(out: Path, i: int, spec: ExperimentSpec) -> Path:
    return out / f"{i:03d}-{spec.algorithm.name}-s{spec.seed}-{spec.result_hash()[:8]}"


Job = tuple[list[tuple[str, str]], int]  # ([(spec JSON, run directory)], torch threads)


def _execute(job: Job) -> list[tuple[str, str, float]]:
    """Run one group of protocol twins (in a worker process), one training for all, each
    into its directory: (dir, status or error, seconds) per run."""
    runs, threads = job
    import torch  # the heavy import only where runs happen

    from fedgen.rundir import DirectorySink
    from fedgen.runner import run, run_twins

    if threads:
        torch.set_num_threads(threads)
    specs = [parse_spec(json.loads(spec_json)) for spec_json, _ in runs]
    roots = [root for _, root in runs]
    t0 = time.perf_counter()
    try:
        sinks = [DirectorySink(Path(r), s) for r, s in zip(roots, specs, strict=True)]
        if len(specs) == 1:
            summaries = [run(specs[0], sinks[0])]
        else:
            summaries = run_twins(specs, sinks)
    except Exception as exc:  # one failed training must not lose the others' results
        wall = time.perf_counter() - t0
        return [(r, f"failed: {type(exc).__name__}: {exc}", wall) for r in roots]
    wall = time.perf_counter() - t0
    return [
        (r, run_line(summary, spec.rounds), wall)
        for r, spec, summary in zip(roots, specs, summaries, strict=True)
    ]


def run_line(summary: RunSummary, rounds: int) -> str:
    """A finished run as `_report` prints it: 'completed · final 70.42% @199 · best … · top-5 …'
    (docs/metrics.md: in %, a round named when it is not the run's last)."""
    return f"{summary.status} · {summary.figures(rounds)}"


def load_result(root: Path) -> RunResult:
    """A run directory as a study input: spec, finished or not, accuracy and time per round."""
    spec = parse_spec(json.loads((root / "spec.json").read_text()), str(root))
    acc: list[float] = []
    user_ms: list[float] = []
    # val_acc (a tuned study) and the cost metrics, by round: NaN where a round has none.
    by_round: dict[str, dict[int, float]] = {n: {} for n in ("val_acc", *COST_METRICS)}
    metrics = root / "metrics.jsonl"
    if metrics.exists():
        for line in metrics.read_text().splitlines():
            if not line.strip():
                continue
            rec: dict[str, Any] = json.loads(line)
            m = rec["metrics"]
            if m.get("test_acc") is not None:
                acc.append(float(m["test_acc"]))
            if rec["round"] >= 1 and m.get("time_user_ms") is not None:
                user_ms.append(float(m["time_user_ms"]))
            for name, values in by_round.items():
                if m.get(name) is not None:
                    values[int(rec["round"])] = float(m[name])
    curves = {
        name: [values.get(r, math.nan) for r in range(max(values, default=-1) + 1)]
        for name, values in by_round.items()
    }
    summary = root / "summary.json"
    done = (
        summary.exists()
        and json.loads(summary.read_text()).get("status") == SummaryStatus.COMPLETED
    )
    return RunResult(spec, done, acc, user_ms, curves["val_acc"], run_cost(curves))


def _report(results: Iterable[tuple[str, str, float]], total: int) -> int:
    """Print one line per finished run; the number that failed."""
    failed = 0
    for k, (root, status, wall) in enumerate(results, 1):
        failed += status.startswith("failed")
        print(
            f"[{k}/{total}] {Path(root).name}: {status} ({wall:.1f} s)", file=sys.stderr, flush=True
        )
    return failed


def cmd_run(args: argparse.Namespace) -> int:
    """Run the study's sweep locally, then print its table with verdicts."""
    p = _plan(args)
    if args.jobs < 1:
        raise SpecError([("--jobs", f"must be at least 1, got {args.jobs}")], "study run")
    out = Path(args.out or Path("runs") / f"study-{p.study.name}-{p.dataset}")
    out.mkdir(parents=True, exist_ok=True)
    dirs = [_run_dir(out, i, spec) for i, spec in enumerate(p.specs)]
    pending = [i for i, d in enumerate(dirs) if not (d / "summary.json").exists()]
    threads = 1 if args.jobs > 1 else 0
    # Pending runs that differ only in the test protocol train once (a done twin's
    # partner trains alone).
    jobs: list[Job] = [
        ([(p.specs[pending[k]].model_dump_json(), str(dirs[pending[k]])) for k in group], threads)
        for group in twin_groups([p.specs[i] for i in pending])
    ]
    print(
        f"study {p.study.name} v{p.study.version} on {p.dataset}: {p.runs} runs "
        f"({p.runs - len(pending)} already done in {out}); the {len(pending)} to run need "
        f"{len(jobs)} training{'s' if len(jobs) != 1 else ''} (runs that differ only in the "
        f"test protocol share one), {args.jobs} jobs; "
        f"est. CPU {format_duration(p.est_local_cpu_s)} for all (estimate)",
        file=sys.stderr,
        flush=True,
    )
    t0 = time.perf_counter()
    if args.jobs == 1:
        failed = _report(chain.from_iterable(map(_execute, jobs)), len(pending))
    else:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            failed = _report(chain.from_iterable(pool.map(_execute, jobs)), len(pending))
    wall = time.perf_counter() - t0
    table = study_table(
        p.study, p.dataset, [load_result(d) for d in dirs if (d / "spec.json").exists()]
    )
    (out / "study.json").write_text(
        json.dumps(table.to_dict(), indent=2, ensure_ascii=False) + "\n"
    )
    md = table.markdown()
    (out / "study.md").write_text(md)
    print(
        f"{p.study.name} v{p.study.version} · {p.dataset} · seeds={p.seeds} · rounds={p.rounds} · "
        f"{table.runs_done}/{p.runs} runs done · wall {wall:.0f} s with {args.jobs} jobs"
    )
    print(f"statistic: {p.study.statistic_text}\n")
    print(md, end="")
    print(f"\nresults: {out}")
    return 1 if failed else 0


def _guarded(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """An unknown study name is a usage error that names the known studies."""

    def wrapper(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except UnknownStudy as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            return EXIT_INVALID

    return wrapper


def add_parser(sub: Any) -> None:
    """Register `fedgen study ...` on the main parser's subcommands."""
    st = sub.add_parser("study", help="the paper's experiments as studies (list, show, run)")
    ss = st.add_subparsers(dest="study_command", required=True)
    ss.add_parser("list", help="name, what it reproduces, runs, estimated CPU time").set_defaults(
        func=cmd_list
    )
    for name, func, text in (
        ("show", cmd_show, "the study's sweep and the paper's table"),
        ("run", cmd_run, "run the study locally and print its table with verdicts"),
    ):
        p = ss.add_parser(name, help=text)
        p.add_argument("name", help=f"one of: {', '.join(STUDIES)}")
        p.add_argument("--dataset", choices=dataset_names(), help="default: the paper's dataset")
        p.add_argument("--seeds", type=int, help="number of seeds, 0..N-1 (default 3)")
        p.add_argument("--rounds", type=int, help="rounds per run (default 200)")
        if name == "run":
            p.add_argument("--jobs", type=int, default=1, help="parallel processes (default 1)")
            p.add_argument("--out", help="output folder (default runs/study-NAME-DATASET)")
        p.set_defaults(func=_guarded(func))
