"""The GPU path on a real GPU: time per run, CPU agreement, and K runs at once on one GPU.

One prepared script for a machine with CUDA (about 10 minutes on an H200). It needs only
this repository and torch. Data: Fashion-MNIST from /usr/share/datasets/fashion-mnist (or
$FEDGEN_DATA) if present; otherwise the `synthetic` dataset, with a note saying so.

1. One 200-round run of FedAvg and of FedGen at the paper's setting (20 users, alpha 0.1,
   10 users a round, T=20, B=32, lr 0.01, official CNN) on cuda:0: seconds per run and
   peak GPU memory (torch.cuda.max_memory_allocated). The first 3 rounds are rerun on the
   CPU with the same spec (stopped after round 3) and compared: accuracy within 1e-3
   absolute, loss within 1e-3 relative, round by round.
2. K = 1, 4, 10 runs at once on that GPU (K processes, each with cores // K torch threads,
   as `fedgen-lab worker --slots-per-device K` would run them; FedGen, 50 rounds each):
   runs per hour (K / wall from launch to the last run's end, start-up included), each
   process's peak torch memory, and the GPU's peak memory.used from nvidia-smi if found.
3. The batched execution (issue 33): FedGen at C = 100 and 1,000 clients a round (C users,
   alpha 1.0, every sample used: alpha 0.1 leaves empty users at these counts), one
   `--batched-rounds` run under `execution: batched` (s per run, ms/round, the clients per
   computation, peak torch memory), its first `--seq-rounds` rounds rerun sequentially for
   the ms/round ratio, and K = `--batched-k` batched runs at once at C = 100 (runs per GPU:
   runs/hour as in 2.).

Without CUDA it prints that it found none and exits 0. `--smoke` runs every code path on
the CPU (device cpu, tiny synthetic runs, K = 1, 2) so that the script is tested here.
Exit code 1 when a run fails or the CPU comparison is outside the tolerance.

    python bench/gpu.py [--rounds 200] [--compare-rounds 3] [--k 1,4,10] [--k-rounds 50]
                        [--k-algorithm fedgen] [--clients 100,1000] [--batched-rounds 200]
                        [--seq-rounds 3] [--batched-k 1,4] [--smoke]
                        [--model resnet18] [--dataset cifar10]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from fedgen.events import MemorySink  # noqa: E402
from fedgen.runner import run  # noqa: E402
from fedgen.spec import parse_spec  # noqa: E402
from fedgen.stats import format_acc  # noqa: E402

FASHION = Path("/usr/share/datasets/fashion-mnist")
ACC_TOL, LOSS_RTOL = 1e-3, 1e-3
NO_CUDA = "no CUDA found"


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def data_choice(smoke: bool) -> tuple[dict[str, Any], str]:
    """The data section and a note: Fashion-MNIST if it is on disk, else synthetic."""
    if smoke:
        return {"name": "synthetic", "synthetic_samples": 1000}, "synthetic (smoke)"
    if FASHION.is_dir() or os.environ.get("FEDGEN_DATA"):
        return {"name": "fashion-mnist"}, "fashion-mnist"
    note = (
        "synthetic: NOTE Fashion-MNIST was not found (/usr/share/datasets/fashion-mnist, "
        "$FEDGEN_DATA); figures are for the synthetic dataset at the paper's split"
    )
    return {"name": "synthetic", "synthetic_samples": 20000}, note


# `--model` (every spec's model.name): set by main().
MODEL: list[str] = ["official-cnn"]


def spec_dict(
    algorithm: str, rounds: int, device: str, data: dict[str, Any], smoke: bool, seed: int = 0
) -> dict[str, Any]:
    if smoke:
        setting: dict[str, Any] = {
            "partition": {"num_users": 4, "alpha": 1.0},
            "users_per_round": 2,
            "local_steps": 2,
        }
    else:
        setting = {
            "partition": {"num_users": 20, "alpha": 0.1, "sampling_ratio": 0.5},
            "users_per_round": 10,
            "local_steps": 20,
        }
    return {
        "data": data,
        **setting,
        "model": {"name": MODEL[0]},
        "algorithm": {"name": algorithm},
        "rounds": rounds,
        "batch_size": 32,
        "lr": 0.01,
        "seed": seed,
        "device": device,
        "checkpoint_every": 0,
    }


def batched_spec(
    clients: int, rounds: int, device: str, data: dict[str, Any], smoke: bool, execution: str
) -> dict[str, Any]:
    """FedGen with `clients` users all selected each round, under `execution`."""
    spec = spec_dict("fedgen", rounds, device, data, smoke)
    spec["partition"] = {"num_users": clients, "alpha": 1.0, "sampling_ratio": 1.0}
    return {**spec, "users_per_round": clients, "execution": execution}


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def one_run(spec: dict[str, Any], stop_after: int | None = None) -> tuple[MemorySink, float]:
    """Run in this process; stop after round `stop_after` if given. (sink, seconds)."""
    sink = MemorySink()
    stop = None
    if stop_after is not None:

        def stop() -> bool:
            return len(sink.events) > stop_after  # round 0 is the initial evaluation

    t0 = time.perf_counter()
    run(parse_spec(spec), sink, should_stop=stop)
    _sync(spec["device"])
    return sink, time.perf_counter() - t0


def compare(gpu: MemorySink, cpu: MemorySink, rounds: int) -> list[str]:
    """Round-by-round differences outside the tolerance (empty: they agree)."""
    bad = []
    for g, c in zip(gpu.events[: rounds + 1], cpu.events[: rounds + 1], strict=False):
        da = abs(g.metrics["test_acc"] - c.metrics["test_acc"])
        gl, cl = g.metrics["test_loss"], c.metrics["test_loss"]
        dl = abs(gl - cl) / max(abs(cl), 1e-12)
        print(
            f"    round {g.round}: acc device {g.metrics['test_acc']:.5f} cpu "
            f"{c.metrics['test_acc']:.5f} (|d| {da:.1e}); loss device {gl:.5f} cpu {cl:.5f}"
            f" (rel {dl:.1e})",
            flush=True,
        )
        if da > ACC_TOL or dl > LOSS_RTOL:
            bad.append(f"round {g.round}: acc |d| {da:.2e}, loss rel {dl:.2e}")
    if len(cpu.events) < rounds + 1 or len(gpu.events) < rounds + 1:
        bad.append(f"fewer than {rounds} rounds to compare")
    return bad


def _child(spec: dict[str, Any], threads: int, out: Any) -> None:
    """One of K concurrent runs (a spawned process): seconds and peak torch memory."""
    try:
        torch.set_num_threads(threads)
        _, seconds = one_run(spec)
        peak = torch.cuda.max_memory_allocated() if spec["device"].startswith("cuda") else 0
        out.put(("ok", seconds, peak))
    except BaseException as exc:  # report, never hang the parent
        out.put(("error", f"{type(exc).__name__}: {exc}", 0))


class SmiPeak:
    """Samples nvidia-smi's memory.used (MiB) of GPU 0 every 0.5 s; the peak."""

    def __init__(self) -> None:
        self.exe = shutil.which("nvidia-smi")
        self.peak: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while self.exe and not self._stop.is_set():
            try:
                out = subprocess.run(
                    [
                        self.exe,
                        "--query-gpu=memory.used",
                        "--format=csv,noheader,nounits",
                        "-i",
                        "0",
                    ],
                    capture_output=True,
                    text=True,
                    timeout=5,
                ).stdout.split()
                used = int(out[0]) if out else None
            except (OSError, ValueError, subprocess.TimeoutExpired):
                used = None
            if used is not None:
                self.peak = max(self.peak or 0, used)
            self._stop.wait(0.5)

    def __enter__(self) -> SmiPeak:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def at_once(k: int, specs: list[dict[str, Any]], threads: int) -> dict[str, Any]:
    """K spawned processes, one spec each, started together; runs/hour and memory."""
    ctx = mp.get_context("spawn")  # never fork after CUDA initialisation
    out = ctx.Queue()
    with SmiPeak() as smi:
        t0 = time.perf_counter()
        procs = [ctx.Process(target=_child, args=(s, threads, out)) for s in specs]
        for p in procs:
            p.start()
        results = [out.get() for _ in procs]
        wall = time.perf_counter() - t0
        for p in procs:
            p.join()
    errors = [r[1] for r in results if r[0] != "ok"]
    ok = [r for r in results if r[0] == "ok"]
    return {
        "k": k,
        "threads": threads,
        "wall_s": wall,
        "runs_per_hour": k / wall * 3600,
        "run_s": [r[1] for r in ok],
        "peak_torch_mib": max((r[2] for r in ok), default=0) / 2**20,
        "smi_peak_mib": smi.peak,
        "errors": errors,
    }


def batched_section(
    a: argparse.Namespace,
    device: str,
    data: dict[str, Any],
    cs: list[int],
    rounds: int,
    seq_rounds: int,
    ks: list[int],
) -> list[str]:
    """Section 3: the batched execution per client count, then K batched runs at once."""
    failures: list[str] = []
    print(f"\n3. batched execution on {device} (FedGen, {rounds} rounds; C clients a round)")
    for c in cs:
        spec = batched_spec(c, rounds, device, data, a.smoke, "batched")
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        try:
            sink, seconds = one_run(spec)
            seq_sink, _ = one_run({**spec, "execution": "sequential"}, stop_after=seq_rounds)
        except Exception as exc:
            failures.append(f"batched C={c} on {device}: {type(exc).__name__}: {exc}")
            print(f"  C={c}: FAILED {failures[-1]}", flush=True)
            continue
        peak = torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else 0.0
        info = sink.info

        def ms(s: MemorySink, n: int) -> float:
            timed = [e.metrics["time_total_ms"] for e in s.events[1 : n + 1]]
            return sum(timed) / max(len(timed), 1)

        ratio = ms(seq_sink, seq_rounds) / max(ms(sink, seq_rounds), 1e-9)
        print(
            f"  C={c}: {seconds:.1f} s per {rounds}-round run ({seconds / rounds * 1e3:.0f} ms/round),"
            f" ran {info.execution if info else '?'} with {info.batch_clients if info else '?'}"
            f" clients per computation; first {seq_rounds} round(s) sequential/batched"
            f" {ratio:.2f}x; peak torch memory {peak:.0f} MiB",
            flush=True,
        )
        if info is None or info.execution != "batched":
            failures.append(f"batched C={c}: ran {info.execution if info else 'no info'}")
    base = None
    for k in ks:
        specs = [
            {**batched_spec(cs[0], rounds, device, data, a.smoke, "batched"), "seed": i}
            for i in range(k)
        ]
        r = at_once(k, specs, 1 if a.smoke else max(1, cores() // k))
        base = base or r
        print(
            f"  K={k} batched runs at once (C={cs[0]}): {r['runs_per_hour']:.1f} runs/hour"
            f" ({r['runs_per_hour'] / base['runs_per_hour']:.2f}x K=1; wall {r['wall_s']:.1f} s);"
            f" peak torch memory per process {r['peak_torch_mib']:.0f} MiB",
            flush=True,
        )
        failures += [f"batched K={k}: {e}" for e in r["errors"]]
    return failures


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--compare-rounds", type=int, default=3)
    p.add_argument("--k", default="1,4,10", help="runs at once on the GPU")
    p.add_argument("--k-rounds", type=int, default=50, help="rounds of each concurrent run")
    p.add_argument("--k-algorithm", default="fedgen")
    p.add_argument("--clients", default="100,1000", help="clients per round, batched case")
    p.add_argument("--batched-rounds", type=int, default=200)
    p.add_argument("--seq-rounds", type=int, default=3, help="sequential rounds for the ratio")
    p.add_argument("--batched-k", default="1,4", help="batched runs at once (C = first)")
    p.add_argument("--smoke", action="store_true", help="every code path on the CPU, tiny runs")
    p.add_argument("--model", default="official-cnn", help="a registered model (e.g. resnet18)")
    p.add_argument(
        "--dataset",
        default="",
        help="a dataset (files absent: random tensors of its shape, bench/stand_in.py); "
        "default: Fashion-MNIST if present, else synthetic",
    )
    a = p.parse_args()
    if a.smoke:
        # One thread: a shared CPU machine is the smoke test's home (no oversubscription).
        torch.set_num_threads(1)
        device, rounds, cmp_rounds, ks, k_rounds = "cpu", 2, 2, [1, 2], 1
        cs, batched_rounds, seq_rounds, batched_ks = [4], 2, 1, [1, 2]
    else:
        if not torch.cuda.is_available():
            print(
                f"{NO_CUDA} (torch {torch.__version__}: torch.cuda.is_available() is False);"
                " nothing to measure, exiting 0"
            )
            return 0
        device, rounds, cmp_rounds = "cuda:0", a.rounds, a.compare_rounds
        ks, k_rounds = [int(x) for x in a.k.split(",") if x.strip()], a.k_rounds
        cs = [int(x) for x in a.clients.split(",") if x.strip()]
        batched_rounds, seq_rounds = a.batched_rounds, a.seq_rounds
        batched_ks = [int(x) for x in a.batched_k.split(",") if x.strip()]
    data, note = data_choice(a.smoke)
    MODEL[0] = a.model
    if a.dataset:
        sys.path.insert(0, str(ROOT / "bench"))
        from stand_in import stand_in

        # The stand-in is registered in this process: the K-at-once children see it where
        # they fork (Linux's default start method).
        data = {"name": stand_in(a.dataset)}
        note = f"{data['name']} (asked: {a.dataset}), model {a.model}"
    name = torch.cuda.get_device_name(0) if device.startswith("cuda") else platform.processor()
    print(
        f"bench/gpu.py: device {device} ({name}); torch {torch.__version__}; {cores()} cores;"
        f" data {note}; smoke={a.smoke}",
        flush=True,
    )
    failures: list[str] = []

    print(f"\n1. one {rounds}-round run per algorithm on {device}, then {cmp_rounds} rounds on cpu")
    for algo in ("fedavg", "fedgen"):
        spec = spec_dict(algo, rounds, device, data, a.smoke)
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        try:
            gpu_sink, seconds = one_run(spec)
        except Exception as exc:
            failures.append(f"{algo} on {device}: {type(exc).__name__}: {exc}")
            print(f"  {algo}: FAILED {failures[-1]}", flush=True)
            continue
        peak = torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else 0.0
        summary = gpu_sink.summary
        print(
            f"  {algo}: {seconds:.1f} s per {rounds}-round run ({seconds / rounds * 1e3:.0f} ms/round),"
            f" final {format_acc(summary.final_acc, summary.final_round, rounds) if summary else '–'},"
            f" peak torch memory {peak:.0f} MiB",
            flush=True,
        )
        cpu_sink, _ = one_run({**spec, "device": "cpu"}, stop_after=cmp_rounds)
        bad = compare(gpu_sink, cpu_sink, cmp_rounds)
        verdict = "agree" if not bad else "DIFFER: " + "; ".join(bad)
        print(f"  {algo}: device vs cpu, first {cmp_rounds} rounds: {verdict}", flush=True)
        failures += [f"{algo} cpu comparison: {b}" for b in bad]

    print(f"\n2. K runs at once on {device} ({a.k_algorithm}, {k_rounds} rounds each)")
    base = None
    for k in ks:
        specs = [
            spec_dict(a.k_algorithm, k_rounds, device, data, a.smoke, seed=i) for i in range(k)
        ]
        r = at_once(k, specs, 1 if a.smoke else max(1, cores() // k))
        base = base or r
        smi = f"{r['smi_peak_mib']} MiB" if r["smi_peak_mib"] is not None else "n/a (no nvidia-smi)"
        per_run = (sum(r["run_s"]) / len(r["run_s"])) if r["run_s"] else float("nan")
        print(
            f"  K={k}: {r['runs_per_hour']:.1f} runs/hour ({r['runs_per_hour'] / base['runs_per_hour']:.2f}x K=1;"
            f" wall {r['wall_s']:.1f} s incl. start-up; mean run {per_run:.1f} s;"
            f" {r['threads']} torch thread(s) each); peak torch memory per process"
            f" {r['peak_torch_mib']:.0f} MiB; GPU memory.used peak {smi}",
            flush=True,
        )
        failures += [f"K={k}: {e}" for e in r["errors"]]
    failures += batched_section(a, device, data, cs, batched_rounds, seq_rounds, batched_ks)
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    print("\nall runs succeeded; device and cpu agree within tolerance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
