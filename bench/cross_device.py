"""Cross-device rounds: many users, a few percent of them a round; time per round and memory.

    python bench/cross_device.py --users N --per-round K[,K2] --rounds R
                                 [--algorithms fedavg,fedgen,scaffold]
                                 [--dataset fashion-mnist|synthetic-fedprox]
                                 [--executions sequential,batched] [--local-steps 20]
                                 [--batch-size 32] [--alpha 1.0] [--threads N]

Each case (an algorithm under an execution) runs in a child process of its own: it builds the
run (`fedgen.runner.Simulation`: data, split, algorithm), trains and evaluates one warm-up
round, then R timed rounds. One line per case gives the median seconds per round (all of it:
sampling, local training, server, evaluation), ms per client (the round's local training
divided by its K clients), the evaluation's share, and the child's peak resident set (its
os.wait4 rusage: what the run holds at its largest, data and per-user state included; with
several K, all of them together). `--per-round 10,100` builds one run per K in the same child
and times their rounds interleaved, so a shared machine's drift hits both alike, and prints the
per-client ratio. The LAST line sums up each algorithm at its faster execution, exactly:

    N users, K per round: <alg> X s/round (Y ms per client), <alg> ..., peak RSS Z GB

Fashion-MNIST is split by the lab's Dirichlet draw (`partition.draws: fedgen`) with
`sampling_ratio` 1 (every sample kept: 10,000 users hold 6 each) and `--alpha`; users with
fewer samples than a batch train on all of theirs. `synthetic-fedprox` needs no files (its
users are generated, `fedgen.data.fedprox`) and runs with the `mlr` model. No timed test
reads these figures: the closing note quotes them with the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def case_spec(args: argparse.Namespace, algorithm: str, execution: str, k: int) -> dict[str, Any]:
    fedprox = args.dataset == "synthetic-fedprox"
    partition: dict[str, Any] = {"num_users": args.users, "data_seed": 1}
    if not fedprox:
        partition.update(
            alpha=args.alpha,
            sampling_ratio=1.0,
            min_samples=1 if args.users > 1000 else 10,
            draws="fedgen",
        )
    spec: dict[str, Any] = {
        "data": {"name": args.dataset},
        "partition": partition,
        "algorithm": {"name": algorithm},
        "execution": execution,
        "users_per_round": k,
        "local_steps": args.local_steps,
        "batch_size": args.batch_size,
        "rounds": args.rounds + 1,
        "checkpoint_every": 0,
    }
    if fedprox:
        spec["model"] = {"name": "mlr"}
    return spec


def child(specs_json: str) -> None:
    """One case: per spec (one per K), a warm-up round, then the timed rounds, the specs'
    rounds interleaved (round r of each in turn: a shared machine's drift hits them alike);
    prints each one's figures as JSON."""
    import torch

    from fedgen.runner import Simulation
    from fedgen.spec import parse_spec

    specs = [parse_spec(s) for s in json.loads(specs_json)]
    sims, build_s = [], []
    for spec in specs:
        t0 = time.perf_counter()
        sims.append(Simulation(spec))
        build_s.append(time.perf_counter() - t0)
    rounds: list[list[tuple[float, float, float]]] = [[] for _ in sims]
    for r in range(1, specs[0].rounds + 1):
        for sim, got in zip(sims, rounds, strict=True):
            t = time.perf_counter()
            event = sim.round(r)
            total = time.perf_counter() - t
            if r > 1:
                m = event.metrics
                got.append((total, m["time_train_ms"] / 1e3, m["time_eval_ms"] / 1e3))
    out = [
        {
            "execution": sim.execution.mode,
            "chunk": sim.execution.chunk,
            "threads": torch.get_num_threads(),
            "build_s": b,
            "round_s": statistics.median(r[0] for r in got),
            "train_s": statistics.median(r[1] for r in got),
            "eval_s": statistics.median(r[2] for r in got),
        }
        for sim, b, got in zip(sims, build_s, rounds, strict=True)
    ]
    print(json.dumps(out))


def run_case(specs: list[dict[str, Any]], threads: int | None) -> list[dict[str, Any]]:
    env = dict(os.environ)
    if threads:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", json.dumps(specs)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate()  # reaps it through os.waitpid: `_RSS` keeps its rusage
    if proc.returncode != 0:
        raise SystemExit(f"case {specs[0]['algorithm']['name']} failed:\n{err[-3000:]}")
    got: list[dict[str, Any]] = json.loads(out.strip().splitlines()[-1])
    for one in got:
        one["peak_rss"] = _RSS.get(proc.pid, 0)
    return got


#: Peak RSS (bytes) of each reaped child, by pid.
_RSS: dict[int, int] = {}


def _waitpid_with_rusage() -> None:
    """Make Popen reap its children with os.wait4 so their rusage is kept (`_RSS`)."""
    real_waitpid = os.waitpid

    def waitpid(pid: int, options: int) -> tuple[int, int]:
        if pid <= 0:
            return real_waitpid(pid, options)
        got_pid, status, usage = os.wait4(pid, options)
        if got_pid == pid:
            _RSS[pid] = int(usage.ru_maxrss) * 1024
        return got_pid, status

    os.waitpid = waitpid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument(
        "--per-round",
        default="10",
        help="K, clients a round; a list (10,100) times each K's rounds interleaved in one "
        "process and prints their per-client ratio",
    )
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds (after one warm-up)")
    ap.add_argument("--algorithms", default="fedavg,fedgen,scaffold")
    ap.add_argument(
        "--dataset", default="fashion-mnist", choices=["fashion-mnist", "synthetic-fedprox"]
    )
    ap.add_argument("--executions", default="sequential,batched")
    ap.add_argument("--local-steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--alpha", type=float, default=1.0, help="Dirichlet α (fashion-mnist)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads per case")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    _waitpid_with_rusage()
    cpus = os.cpu_count()
    print(
        f"# {platform.node()}: {platform.processor() or platform.machine()}, {cpus} CPUs; "
        f"{args.dataset}, T={args.local_steps}, B={args.batch_size}, {args.rounds} timed rounds",
        flush=True,
    )
    ks = [int(k) for k in str(args.per_round).split(",")]
    best: dict[int, dict[str, tuple[float, float]]] = {k: {} for k in ks}
    per_client: dict[tuple[str, str, int], float] = {}
    peak = 0
    for alg in args.algorithms.split(","):
        for execution in args.executions.split(","):
            specs = [case_spec(args, alg, execution, k) for k in ks]
            for k, got in zip(ks, run_case(specs, args.threads), strict=True):
                per_client_ms = got["train_s"] * 1e3 / k
                per_client[(alg, execution, k)] = per_client_ms
                peak = max(peak, got["peak_rss"])
                mode = got["execution"] + (f" x{got['chunk']}" if got["chunk"] else "")
                print(
                    f"{args.users} users, {k} per round: {alg} {execution} ({mode}, "
                    f"{got['threads']} threads) {got['round_s']:.2f} s/round "
                    f"({per_client_ms:.1f} ms per client; evaluation {got['eval_s']:.2f} s; "
                    f"build {got['build_s']:.1f} s), peak RSS {got['peak_rss'] / 1e9:.2f} GB",
                    flush=True,
                )
                if alg not in best[k] or got["round_s"] < best[k][alg][0]:
                    best[k][alg] = (got["round_s"], per_client_ms)
    if len(ks) > 1:  # the per-client cost of the largest K against the smallest's, same process
        lo, hi = min(ks), max(ks)
        for (alg, execution, k), ms in per_client.items():
            if k == hi:
                ratio = ms / per_client[(alg, execution, lo)]
                print(f"per client, {hi} vs {lo} per round: {alg} {execution} {ratio:.2f}x")
    for k in ks:
        parts = ", ".join(
            f"{a} {s:.2f} s/round ({ms:.1f} ms per client)" for a, (s, ms) in best[k].items()
        )
        print(f"{args.users} users, {k} per round: {parts}, peak RSS {peak / 1e9:.2f} GB")


if __name__ == "__main__":
    main()
