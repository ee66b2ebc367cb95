"""Milliseconds per round at the paper's setting, and peak memory.

Fashion-MNIST, 20 users, 10 per round, T=20, B=32, official CNN, alpha 0.1,
on CPU (and on CUDA when available). Prints the median over rounds after a
warm-up, with and without evaluation, and the process's peak resident memory.
The official implementation needs about 450 ms per FedAvg round and 1.0 s per
FedGen round on a 2-core machine, using about 1.1 GB (reference issue #2, #3).

    python bench/round_speed.py [--rounds 30] [--warmup 5] [--algorithms fedavg,fedgen] [--device cpu]
"""

from __future__ import annotations

import argparse
import platform
import resource
import statistics
import time

import torch

from fedgen.events import MemorySink
from fedgen.runner import run
from fedgen.spec import parse_spec


def measure(algorithm: str, device: str, rounds: int, warmup: int) -> dict[str, float]:
    spec = parse_spec(
        {
            "data": {"name": "fashion-mnist"},
            "partition": {"num_users": 20, "alpha": 0.1, "sampling_ratio": 0.5},
            "algorithm": {"name": algorithm},
            "users_per_round": 10,
            "local_steps": 20,
            "batch_size": 32,
            "rounds": rounds,
            "checkpoint_every": 0,
            "device": device,
        }
    )
    sink = MemorySink()
    t0 = time.perf_counter()
    summary = run(spec, sink)
    wall = time.perf_counter() - t0
    timed = [e.metrics for e in sink.events[1 + warmup :]]
    total = [m["time_total_ms"] for m in timed]
    no_eval = [m["time_total_ms"] - m["time_eval_ms"] for m in timed]
    return {
        "round_ms": statistics.median(total),
        "round_ms_no_eval": statistics.median(no_eval),
        "user_ms": statistics.median(m["time_user_ms"] for m in timed),
        "server_ms": statistics.median(m["time_server_ms"] for m in timed),
        "eval_ms": statistics.median(m["time_eval_ms"] for m in timed),
        "final_acc": summary.final_acc,
        "wall_s": wall,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--algorithms", default="fedavg")
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    print(
        f"machine: {platform.node()} {platform.machine()} cores={torch.get_num_threads()} "
        f"torch={torch.__version__} device={args.device}"
    )
    print(
        f"{'algorithm':<12}{'ms/round':>10}{'no eval':>10}{'user ms':>10}{'server ms':>11}{'eval ms':>9}{'acc':>8}"
    )
    for algo in args.algorithms.split(","):
        r = measure(algo, args.device, args.rounds, args.warmup)
        print(
            f"{algo:<12}{r['round_ms']:>10.1f}{r['round_ms_no_eval']:>10.1f}{r['user_ms']:>10.2f}"
            f"{r['server_ms']:>11.2f}{r['eval_ms']:>9.1f}{r['final_acc']:>8.4f}"
        )
    if args.device.startswith("cuda"):
        print(f"peak GPU memory: {torch.cuda.max_memory_allocated() / 2**20:.1f} MiB")
    print(
        f"peak resident memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()
