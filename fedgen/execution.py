"""Which execution a run uses and how many clients each batched computation holds.

`choose`: the spec's `execution` (`fedgen.execution_spec`) against what this process has.
`auto` picks `batched` on a GPU or with 2+ CPU threads, `sequential` on one thread, the
cautious choice for 1-thread slots (a first probe, grouped convolutions, ran 0.78x there). The
channels-last stacks here are faster even on one thread (batched 1.76x per round for FedAvg
and 1.72x for FedGen at 10 users on the 2-core VM, more with 2 threads and more users:
docs/results/batched-execution.md). A spec that wants the faster path on one thread
says `execution: batched`. `batched` falls back to `sequential`, saying why,
for an algorithm not declared `batchable` or a model `fedgen.batched` cannot stack. A model
whose declaration says it ran slower batched on the CPU (`cpu_batched_speedup` at most 1)
runs sequential under `auto` on the CPU, the measurement in the reason.

`chunk_size`: `batch_clients: auto` takes as many clients per computation as a quarter of
the free memory holds (the GPU's free memory on CUDA, MemAvailable on the CPU), from an
estimate of one client's parameters, gradients and the activations a step keeps for its
backward pass; a round's clients are then split into equal chunks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from fedgen.batched import unsupported
from fedgen.models.cnn import SplitModel
from fedgen.models.registry import get_model

# Share of the free memory the stacks of one computation may take.
MEMORY_SHARE = 0.25
# Live copies of a client's parameters in a batched round: the stack, its gradient, the
# round's anchor or upload, and the scaled gradient.
PARAM_COPIES = 4
# Per activation a step keeps: the output, the saved input of the next layer, its gradient.
ACTIVATION_COPIES = 3


@dataclass(frozen=True)
class Execution:
    """What a run uses: `mode` ('sequential' or 'batched'), `reason` (why), and under
    `batched` the clients per computation (`chunk`; None under sequential)."""

    mode: str
    reason: str
    chunk: int | None = None


def choose(
    requested: str,
    *,
    device: torch.device,
    threads: int,
    batchable: bool,
    model: SplitModel,
    model_name: str | None = None,
) -> tuple[str, str]:
    """(mode, reason): the spec's `execution` resolved for this device and thread count.

    On 2+ CPU threads `auto` also reads the model's declaration (`model_name`,
    `fedgen.models.registry.ModelDecl.cpu_batched_speedup`): a model measured slower batched
    than sequential on the CPU runs sequentially, and the reason gives the measurement.
    """
    if requested == "sequential":
        return "sequential", "the spec asks for sequential"
    if not batchable:
        return "sequential", "the algorithm's client update does not batch"
    why_not = unsupported(model)
    if why_not is not None:
        return "sequential", f"the model does not batch: {why_not}"
    if requested == "batched":
        return "batched", "the spec asks for batched"
    if device.type == "cuda":
        return "batched", "auto: a GPU"
    if threads >= 2:
        decl = get_model(model_name) if model_name is not None else None
        speedup = decl.cpu_batched_speedup if decl is not None else None
        if decl is None or speedup is None:
            return "batched", f"auto: {threads} CPU threads"
        measured = f"{decl.name} measured {speedup:.2f}x batched/sequential on CPU"
        note = f" ({decl.speed_note})" if decl.speed_note else ""
        if speedup <= 1.0:
            return "sequential", f"auto: {threads} CPU threads, but {measured}{note}"
        return "batched", f"auto: {threads} CPU threads, {measured}{note}"
    return "sequential", "auto: 1 CPU thread (a 1-thread slot runs sequential)"


def free_memory(device: torch.device) -> int | None:
    """Bytes free for tensors on `device` now; None where it cannot be read."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def client_bytes(
    model: SplitModel, input_shape: tuple[int, int, int], rows: int, state_copies: int = 0
) -> int:
    """Estimated bytes of one client in a batched step: parameters (with `state_copies` more
    parameter-sized stacks the algorithm keeps) and activations."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    sizes: list[int] = []
    hooks = [
        m.register_forward_hook(lambda _m, _i, out: sizes.append(out.numel()))
        # Every leaf layer (a residual block's inner layers too): each output is kept.
        for m in model.features.modules()
        if not any(True for _ in m.children())
    ]
    try:
        was_training = model.training
        model.eval()
        with torch.no_grad():
            device = next(model.parameters()).device
            model.features(torch.zeros(1, *input_shape, device=device))
        model.train(was_training)
    finally:
        for h in hooks:
            h.remove()
    per_row = sum(sizes) * 4
    return (PARAM_COPIES + state_copies) * params + ACTIVATION_COPIES * per_row * rows


def chunk_size(
    requested: int | str,
    users_per_round: int,
    per_client: int,
    free: int | None,
) -> int:
    """Clients per batched computation: `requested` as a number, or (`auto`) what fits."""
    if isinstance(requested, int):
        fit = requested
    elif free is None:
        fit = users_per_round
    else:
        fit = max(1, int(free * MEMORY_SHARE) // max(per_client, 1))
    fit = max(1, min(fit, users_per_round))
    # Equal chunks: 50 users that fit 48 at a time run as 25 + 25, not 48 + 2.
    return math.ceil(users_per_round / math.ceil(users_per_round / fit))


def chunks(items: list[int], size: int) -> list[list[int]]:
    """`items` in order, split into consecutive runs of at most `size`."""
    return [items[i : i + size] for i in range(0, len(items), size)]
