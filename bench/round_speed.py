"""Per-update time as a ratio to the eager floor, ms per round, and `fedgen run`'s peak memory.

Fashion-MNIST at the paper's setting (20 users, 10 per round, T=20, B=32, official CNN,
alpha 0.1), on CPU (or CUDA with --device). In one process, interleaved:

* the eager floor: a plain PyTorch loop (no fedgen code) over the same model, batch and
  steps, i.e. one "user update" = 20 SGD steps of B=32 on the official CNN;
* our rounds (`fedgen.runner.Simulation`), one round of each algorithm in turn, each
  preceded by a block of as many floor updates as a round has users.

Our per-user update is printed as a ratio to the floor, so the figure does not depend on
how fast this (shared, drifting) machine is that day; absolute ms are printed for reference
only. The memory figure is the peak resident set of a `python -m fedgen run` subprocess on
a 3-round spec at the same setting (os.wait4's rusage of that child), i.e. what a user sees,
not this process.

    python bench/round_speed.py [--rounds 20] [--warmup 3] [--algorithms fedavg,fedgen]
                                [--device cpu] [--threads N] [--no-memory]
                                [--model official-cnn] [--dataset fashion-mnist]
                                [--local-steps 20] [--batch-size 32]

`--model` and `--dataset` time another model and dataset (a dataset whose files are absent
here, e.g. cifar10, is replaced by random tensors of its shape: `bench/stand_in.py`); the
eager floor is then that model in a plain loop. `--local-steps` / `--batch-size` shorten a
round of a large model on the CPU (the paper's T = 20, B = 32 by default).

With `--execution sequential,batched` (issue 33) it times instead each algorithm's rounds
under each execution, interleaved round by round in one process, at each of
`--users-per-round 10,50` (num_users = max(20, users per round)), and prints the median
ms per round (all of it, and its local-training part) and sequential / batched.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from fedgen.runner import Simulation
from fedgen.spec import parse_spec

ROOT = Path(__file__).resolve().parents[1]
STEPS, BATCH, USERS_PER_ROUND = 20, 32, 10
# What `--model`, `--dataset`, `--local-steps`, `--batch-size` set (main() fills them in).
SETTING: dict[str, Any] = {
    "model": "official-cnn",
    "dataset": "fashion-mnist",
    "steps": STEPS,
    "batch": BATCH,
}


def paper_spec(
    algorithm: str,
    rounds: int,
    device: str,
    users_per_round: int = USERS_PER_ROUND,
    execution: str = "sequential",
) -> dict[str, Any]:
    return {
        "data": {"name": SETTING["dataset"]},
        "model": {"name": SETTING["model"]},
        "partition": {"num_users": max(20, users_per_round), "alpha": 0.1, "sampling_ratio": 0.5},
        "algorithm": {"name": algorithm},
        "execution": execution,
        "users_per_round": users_per_round,
        "local_steps": SETTING["steps"],
        "batch_size": SETTING["batch"],
        "rounds": rounds,
        "checkpoint_every": 0,
        "device": device,
    }


class Floor:
    """The eager floor: the run's model (official CNN by default) trained by a plain loop."""

    def __init__(self, device: torch.device, n: int = 3000) -> None:
        from fedgen.data.registry import get_dataset
        from fedgen.models.cnn import build_model
        from fedgen.models.decl import ModelConfig

        decl = get_dataset(SETTING["dataset"])
        c, h, w = decl.shape
        classes = decl.classes
        self.model: nn.Module = build_model(
            ModelConfig(SETTING["model"], c, h, classes, image_width=w), 0
        ).to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.x = torch.randn(n, c, h, w, device=device)
        self.y = torch.randint(0, classes, (n,), device=device)
        self.device = device

    def update(self) -> float:
        """One user update (T steps of B), in ms."""
        t0 = time.perf_counter()
        self.model.train()
        for _ in range(SETTING["steps"]):
            idx = torch.randint(0, self.x.shape[0], (SETTING["batch"],), device=self.device)
            loss = nn.functional.cross_entropy(self.model(self.x[idx]), self.y[idx])
            self.opt.zero_grad(set_to_none=True)
            loss.backward()  # type: ignore[no-untyped-call]
            self.opt.step()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return (time.perf_counter() - t0) * 1e3


def measure(
    algorithms: list[str], device: str, rounds: int, warmup: int
) -> tuple[list[float], dict[str, list[dict[str, float]]]]:
    """Floor update ms (all blocks) and each algorithm's round metrics, interleaved."""
    sims = {a: Simulation(parse_spec(paper_spec(a, 10_000, device))) for a in algorithms}
    for sim in sims.values():
        sim.initial_event()
    floor = Floor(torch.device(device))
    floor_ms: list[float] = []
    seen: dict[str, list[dict[str, float]]] = {a: [] for a in algorithms}
    for r in range(1, warmup + rounds + 1):
        for name, sim in sims.items():
            block = [floor.update() for _ in range(USERS_PER_ROUND)]
            metrics = sim.round(r).metrics
            if r > warmup:
                floor_ms.extend(block)
                seen[name].append(metrics)
    return floor_ms, seen


def measure_executions(
    algorithm: str,
    users_per_round: int,
    executions: list[str],
    device: str,
    rounds: int,
    warmup: int,
) -> dict[str, list[dict[str, float]]]:
    """Each execution's round metrics for one algorithm and round size, interleaved by round."""
    sims = {
        ex: Simulation(parse_spec(paper_spec(algorithm, 10_000, device, users_per_round, ex)))
        for ex in executions
    }
    for sim in sims.values():
        sim.initial_event()
    seen: dict[str, list[dict[str, float]]] = {ex: [] for ex in executions}
    for r in range(1, warmup + rounds + 1):
        for ex, sim in sims.items():
            metrics = sim.round(r).metrics
            if r > warmup:
                seen[ex].append(metrics)
    picked = {ex: f"{s.execution.mode} (chunk {s.execution.chunk})" for ex, s in sims.items()}
    print(f"  {algorithm}, {users_per_round}/round: ran as {picked}")
    return seen


def report_executions(args: argparse.Namespace) -> None:
    """`--execution`: ms per round of each execution, interleaved, and their ratio."""
    executions = args.execution.split(",")
    print(
        f"{'algorithm':<10}{'users':>6}{'execution':>12}{'ms/round':>10}{'train ms':>10}"
        f"{'acc':>8}{'speed-up':>10}{'train':>8}"
    )
    for algorithm in args.algorithms.split(","):
        for upr in [int(u) for u in args.users_per_round.split(",")]:
            seen = measure_executions(
                algorithm, upr, executions, args.device, args.rounds, args.warmup
            )
            base = executions[0]
            base_round = statistics.median(m["time_total_ms"] for m in seen[base])
            base_train = statistics.median(m["time_train_ms"] for m in seen[base])
            for ex in executions:
                rnd = statistics.median(m["time_total_ms"] for m in seen[ex])
                train = statistics.median(m["time_train_ms"] for m in seen[ex])
                print(
                    f"{algorithm:<10}{upr:>6}{ex:>12}{rnd:>10.1f}{train:>10.1f}"
                    f"{seen[ex][-1]['test_acc']:>8.4f}{base_round / rnd:>9.2f}x"
                    f"{base_train / train:>7.2f}x"
                )
    print(
        f"(medians of {args.rounds} rounds after {args.warmup} warm-up; speed-up = "
        f"{executions[0]} / this, per round and for the local training alone)"
    )


def fedgen_run_peak_rss_mib(algorithm: str, device: str) -> float:
    """Peak RSS of `python -m fedgen run` on a 3-round paper-setting spec, as a user runs it."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(json.dumps(paper_spec(algorithm, 3, device)))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "fedgen", "run", str(spec), "--out", str(Path(tmp) / "run")],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"fedgen run failed with exit code {proc.returncode}")
    return usage.ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--algorithms", default="fedavg,fedgen")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    p.add_argument("--no-memory", action="store_true", help="skip the `fedgen run` memory run")
    p.add_argument(
        "--execution",
        default="",
        help="compare executions instead, e.g. sequential,batched (first = the baseline)",
    )
    p.add_argument("--users-per-round", default=str(USERS_PER_ROUND), help="with --execution")
    p.add_argument("--model", default="official-cnn", help="a registered model")
    p.add_argument(
        "--dataset", default="fashion-mnist", help="files absent: random tensors of its shape"
    )
    p.add_argument("--local-steps", type=int, default=STEPS, help="T of every update")
    p.add_argument("--batch-size", type=int, default=BATCH, help="B of every step")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from stand_in import stand_in

    SETTING.update(
        model=args.model,
        dataset=stand_in(args.dataset),
        steps=args.local_steps,
        batch=args.batch_size,
    )
    algorithms = args.algorithms.split(",")
    print(
        f"machine: {platform.node()} {platform.machine()} cpus={os.cpu_count()} "
        f"threads={torch.get_num_threads()} torch={torch.__version__} device={args.device}"
    )
    print(
        f"setting: model={SETTING['model']} dataset={SETTING['dataset']} "
        f"T={SETTING['steps']} B={SETTING['batch']}"
    )
    if args.execution:
        report_executions(args)
        return
    floor_ms, seen = measure(algorithms, args.device, args.rounds, args.warmup)
    floor = statistics.median(floor_ms)
    print(
        f"eager floor (plain PyTorch loop, {SETTING['model']}, {SETTING['steps']} SGD steps of "
        f"B={SETTING['batch']}): "
        f"{floor:.2f} ms per update (median of {len(floor_ms)}, interleaved with the rounds)"
    )
    print(
        f"{'algorithm':<10}{'user ms':>9}{'/ floor':>9}{'ms/round':>10}{'/ floor':>9}"
        f"{'no eval':>9}{'server ms':>11}{'eval ms':>9}{'acc':>8}"
    )
    for name, timed in seen.items():
        user = statistics.median(m["time_user_ms"] for m in timed)
        rnd = statistics.median(m["time_total_ms"] for m in timed)
        print(
            f"{name:<10}{user:>9.2f}{user / floor:>8.2f}x{rnd:>10.1f}{rnd / floor:>8.1f}x"
            f"{statistics.median(m['time_total_ms'] - m['time_eval_ms'] for m in timed):>9.1f}"
            f"{statistics.median(m['time_server_ms'] for m in timed):>11.2f}"
            f"{statistics.median(m['time_eval_ms'] for m in timed):>9.1f}"
            f"{timed[-1]['test_acc']:>8.4f}"
        )
    print(
        f"(a round is {USERS_PER_ROUND} user updates, so its floor is {USERS_PER_ROUND}x; "
        f"ms/round / floor above {USERS_PER_ROUND}x is server step, evaluation and bookkeeping)"
    )
    if args.device.startswith("cuda"):
        print(
            f"peak GPU memory (this process): {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB"
        )
    if SETTING["dataset"].startswith("random-"):
        print("(no `fedgen run` memory figure: the random stand-in exists in this process only)")
    elif not args.no_memory:
        for name in algorithms:
            rss = fedgen_run_peak_rss_mib(name, args.device)
            print(f"`fedgen run` peak resident memory, {name}, 3 rounds: {rss:.0f} MiB")
    print(
        "official code vs `fedgen run` (measured outside this project by issue 12's author, "
        "same machine kind, interleaved, 20 rounds each, 2 threads): per-round official/ours "
        "1.39x FedAvg, 1.75x FedGen"
    )


if __name__ == "__main__":
    main()
