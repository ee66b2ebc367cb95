"""Which execution a run uses and how many clients each batched computation holds.

`choose`: the spec's `execution` (`fedgen.execution_spec`) against what this process has.
`auto` picks `batched` on a GPU or with 2+ CPU threads, `sequential` on one thread, as
issue 33 asks of 1-thread slots (its probe, grouped convolutions, ran 0.78x there). The
channels-last stacks here are faster even on one thread: on the quiet 2-core machine,
2026-12-03, `bench/round_speed.py --threads 1 --execution auto,sequential,batched` measured
batched 1.76x (FedAvg) and 1.72x (FedGen) per round at 10 users, and with 2 threads 2.24x /
2.05x at 10 users and 2.83x / 2.46x at 50. A spec that wants the faster path on one thread
says `execution: batched`. `batched` falls back to `sequential`, saying why,
for an algorithm not declared `batchable` or a model `fedgen.batched` cannot stack.

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
) -> tuple[str, str]:
    """(mode, reason): the spec's `execution` resolved for this device and thread count."""
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
        return "batched", f"auto: {threads} CPU threads"
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
        for m in model.features.children()
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
