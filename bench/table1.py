"""Paper Table 1 on Fashion-MNIST: 7 algorithms x alpha x seeds, as a markdown matrix.

Paper setting (20 users, 10 per round, T=20, B=32, 200 rounds), official CNN and
the chosen fidelity profile. Each cell: mean +/- std over seeds of the final
accuracy, and of the official top-5 statistic (reference §1.1: the 5 best rounds
of each seed, pooled over seeds; `fedgen.stats.pooled_top5`). Runs are spread over
`--jobs` processes, each with torch.set_num_threads(1).

    python bench/table1.py [--rounds 200] [--seeds 0,1,2] [--alphas 0.05,0.1,1]
                           [--algorithms fedavg,...] [--jobs 2] [--profile official]
                           [--save curves.json] [--execution sequential,batched]

With `--save`, each finished run is written to the file at once and runs already in
it (same algorithm, alpha, seed, rounds and profile) are not run again: an
interrupted grid resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import torch

from fedgen.algorithms.registry import builtin_algorithms, get_algorithm, label
from fedgen.events import MemorySink
from fedgen.fidelity import resolve
from fedgen.runner import run
from fedgen.spec import parse_spec
from fedgen.stats import (
    common_final_round,
    format_acc,
    mean_std,
    pooled_top5,
    reported_curve,
    summarize_curve,
)

Job = tuple[str, float, int, int, str, str]


def one_run(job: Job) -> tuple[str, float, int, str, list[float], float]:
    """Run one cell's seed; returns (algorithm, alpha, seed, execution, accuracy curve, wall s)."""
    algorithm, alpha, seed, rounds, profile, execution = job
    torch.set_num_threads(1)
    spec = parse_spec(
        {
            "data": {"name": "fashion-mnist"},
            "partition": {"num_users": 20, "alpha": alpha, "sampling_ratio": 0.5},
            "algorithm": {"name": algorithm},
            "fidelity": {"profile": profile},
            "users_per_round": 10,
            "local_steps": 20,
            "batch_size": 32,
            "rounds": rounds,
            "seed": seed,
            "checkpoint_every": 0,
            "execution": execution,
        }
    )
    sink = MemorySink()
    t0 = time.perf_counter()
    run(spec, sink)
    return (
        algorithm,
        alpha,
        seed,
        execution,
        [e.metrics["test_acc"] for e in sink.events],
        time.perf_counter() - t0,
    )


def eval_timing(algorithm: str, profile: str) -> str:
    """The resolved evaluation timing of an algorithm under a profile (FedEnsemble differs)."""
    spec = parse_spec({"algorithm": {"name": algorithm}, "fidelity": {"profile": profile}})
    return resolve(spec).eval_timing


def _final_text(curve: list[float], timing: str, rounds: int) -> str:
    """One run's final and best as everywhere (docs/metrics.md): '70.42% @199 · best …'."""
    c = summarize_curve(curve, timing, rounds)
    final = format_acc(c.final, c.final_round, rounds)
    return f"final {final} · best {format_acc(c.best, c.best_round, rounds)}"


def _cell(curves: list[list[float]], eval_timing: str, rounds: int) -> tuple[str, str]:
    # What the profile reports: official servers never evaluate the post-final model, so
    # their "final" is round R-1 (marked "@R-1" in the cell).
    shown = [[100 * a for a in reported_curve(c, eval_timing, rounds)] for c in curves]
    ends = [summarize_curve(c, eval_timing, rounds) for c in curves]
    fm, fs = mean_std([100 * e.final for e in ends])
    tm, ts = pooled_top5(shown)
    at = common_final_round(ends)
    mark = f" @{at}" if at is not None and at != rounds else ""
    return f"{fm:.2f} ± {fs:.2f}{mark}", f"{tm:.2f} ± {ts:.2f}"


def _load_saved(path: str, rounds: int, profile: str) -> list[dict[str, Any]]:
    """Runs already in `path` for this rounds/profile (none without a file)."""
    if not path:
        return []
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        return []
    if doc.get("rounds") != rounds or doc.get("profile") != profile:
        raise SystemExit(
            f"{path} holds {doc.get('rounds')} rounds / profile {doc.get('profile')}, "
            f"not {rounds} / {profile}: choose another --save file"
        )
    runs: list[dict[str, Any]] = doc["runs"]
    return runs


def _write_saved(path: str, rounds: int, profile: str, runs: list[dict[str, Any]]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump({"rounds": rounds, "profile": profile, "runs": runs}, fh)
    os.replace(tmp, path)


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        )
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--alphas", default="0.05,0.1,1")
    p.add_argument(
        "--algorithms",
        default=",".join(d.name for d in builtin_algorithms()),
        help="spec names, plugins' included (default: the built-ins)",
    )
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--profile", default="official", choices=["official", "paper"])
    p.add_argument("--save", default="", help="also write every accuracy curve to this JSON file")
    p.add_argument(
        "--execution",
        default="sequential",
        help="comma-separated spec executions (sequential, batched); with two, also a table "
        "of their agreement (issue 33)",
    )
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    alphas = [float(a) for a in args.alphas.split(",")]
    algos = args.algorithms.split(",")
    executions = args.execution.split(",")
    # Slowest algorithms first (their declared cost), so the processes finish together.
    jobs: list[Job] = [
        (a, al, s, args.rounds, args.profile, ex)
        for a in sorted(algos, key=lambda a: -get_algorithm(a).ms_per_round)
        for al in alphas
        for s in seeds
        for ex in executions
    ]
    t0 = time.perf_counter()
    results: dict[tuple[str, float, str], list[list[float]]] = {}
    walls: dict[tuple[str, str], list[float]] = {}
    saved = _load_saved(args.save, args.rounds, args.profile)
    # Entries saved before the execution field existed ran sequentially.
    done = {
        (r["algorithm"], r["alpha"], r["seed"], r.get("execution", "sequential")): r for r in saved
    }
    todo = [j for j in jobs if (j[0], j[1], j[2], j[5]) not in done]
    if done:
        print(f"{len(jobs) - len(todo)} of {len(jobs)} runs read from {args.save}", file=sys.stderr)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for i, (algo, alpha, seed, ex, curve, wall) in enumerate(pool.map(one_run, todo), 1):
            entry = {
                "algorithm": algo,
                "alpha": alpha,
                "seed": seed,
                "execution": ex,
                "acc": [round(a, 5) for a in curve],
                "wall_s": round(wall, 1),
            }
            done[(algo, alpha, seed, ex)] = entry
            saved.append(entry)
            if args.save:  # after every run: an interrupted grid loses only the runs in flight
                _write_saved(args.save, args.rounds, args.profile, saved)
            print(
                f"[{i}/{len(todo)}] {algo} alpha={alpha:g} seed={seed} {ex}: "
                f"{_final_text(curve, eval_timing(algo, args.profile), args.rounds)} ({wall:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    for algo, alpha, seed, _, _, ex in jobs:
        entry = done[(algo, alpha, seed, ex)]
        results.setdefault((algo, alpha, ex), []).append(entry["acc"])
        if "wall_s" in entry:
            walls.setdefault((algo, ex), []).append(entry["wall_s"])
    print(
        f"Fashion-MNIST, {args.rounds} rounds, seeds {seeds}, profile {args.profile}; "
        f"commit {_commit()}, {platform.node()} ({platform.machine()}), {args.jobs} jobs x 1 thread; "
        f"total {time.perf_counter() - t0:.0f} s"
    )
    for ex in executions:
        _print_tables(results, algos, alphas, ex, args.profile, args.rounds, len(executions) > 1)
    if len(executions) == 2:
        _print_agreement(results, algos, alphas, executions, args.profile, args.rounds)
    print(
        "\nseconds per run: "
        + ", ".join(
            f"{label(a)}{f' ({ex})' if len(executions) > 1 else ''} {sum(w) / len(w):.0f}"
            for (a, ex), w in walls.items()
        )
    )


def _print_tables(
    results: dict[tuple[str, float, str], list[list[float]]],
    algos: list[str],
    alphas: list[float],
    execution: str,
    profile: str,
    rounds: int,
    named: bool,
) -> None:
    for title, idx in (("final accuracy (%)", 0), ("top-5 statistic (%)", 1)):
        where = f", execution {execution}" if named else ""
        print(f"\n**{title}**{where}, mean ± std over seeds\n")
        if idx == 0:
            print(
                "Final = the last round the algorithm's protocol evaluates; '@N' marks a "
                "final from round N (before_training never evaluates the last aggregation).\n"
            )
        print("| alpha | " + " | ".join(label(a) for a in algos) + " |")
        print("|---|" + "---|" * len(algos))
        for alpha in alphas:
            cells: list[Any] = [
                _cell(results[(a, alpha, execution)], eval_timing(a, profile), rounds)[idx]
                for a in algos
            ]
            print(f"| {alpha:g} | " + " | ".join(cells) + " |")


def _print_agreement(
    results: dict[tuple[str, float, str], list[list[float]]],
    algos: list[str],
    alphas: list[float],
    executions: list[str],
    profile: str,
    rounds: int,
) -> None:
    """Issue 33's check: the two executions' top-5 means differ by at most one seed std."""
    a_ex, b_ex = executions
    print(f"\n**agreement of {a_ex} and {b_ex}**: top-5 statistic (%), mean ± std over seeds\n")
    print(f"| alpha | algorithm | {a_ex} | {b_ex} | Δ | larger std | within one std |")
    print("|---|---|---|---|---|---|---|")
    for alpha in alphas:
        for algo in algos:
            stats = []
            for ex in executions:
                shown = [
                    [100 * x for x in reported_curve(c, eval_timing(algo, profile), rounds)]
                    for c in results[(algo, alpha, ex)]
                ]
                stats.append(pooled_top5(shown))
            (ma, sa), (mb, sb) = stats
            delta, std = mb - ma, max(sa, sb)
            verdict = "yes" if abs(delta) <= std else "no"
            print(
                f"| {alpha:g} | {label(algo)} | {ma:.2f} ± {sa:.2f} | {mb:.2f} ± {sb:.2f} | "
                f"{delta:+.2f} | {std:.2f} | {verdict} |"
            )


if __name__ == "__main__":
    main()
