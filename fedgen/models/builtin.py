"""The built-in models: one `ModelDecl` each (`fedgen.models.registry`), torch-free.

Adding a model (docs/architecture.md, "How to add a model"): its builder (a function
`ModelConfig -> SplitModel`) in `fedgen/models/`, one declaration here: the shapes it
accepts, its latent size, its state dict counted tensor by tensor (`state`, which
`fedgen.sizes` turns into checkpoint estimates; `tests/fedgen/test_sizes.py` checks it against
the built module), its norms, how it batches and its CPU cost factor.

`ms_factor` (the study estimates' cost per round relative to the official CNN): the
McMahan CNN's 8 was measured (2026-12); the others scale it by multiply-adds per sample
(McMahan CNN 12.3 M, CIFAR CNN 33 M, ResNet-18 on 32x32 556 M, MLR 0.0006 M), an estimate
until a study times them.
"""

from __future__ import annotations

from collections.abc import Callable

from fedgen.models.decl import ModelDecl, Shape, StateCounts

RESNET_STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))


def _square_any(shape: Shape) -> str | None:
    _, h, w = shape
    if h != w:
        return "not a square image"
    return None if h >= 4 else f"side {h} < 4"


def _side_32(shape: Shape) -> str | None:
    _, h, w = shape
    return None if (h, w) == (32, 32) else "not 32x32"


def _any(shape: Shape) -> str | None:  # noqa: ARG001 (an `accepts`' signature)
    return None


# -- state dicts, tensor by tensor (the modules in fedgen.models.cnn / .resnet) -------------


def _official_state(shape: Shape, classes: int, norm: str) -> StateCounts:  # noqa: ARG001
    c, side, _ = shape
    s = StateCounts()
    if side == 84:  # CelebA: three Conv+BN+ReLU+MaxPool blocks
        cin = c
        for cout in (16, 32, 64):
            s.conv(cin, cout, 3)
            s.norm(cout, "batch")
            cin = cout
        s.linear(64, 32)
    else:
        half = (side + 3) // 4
        s.conv(c, 6, 3)
        s.norm(6, "batch")
        s.conv(6, 16, 3)
        s.norm(16, "batch")
        s.linear(16 * half * half, 32)
    s.linear(32, classes, predictor=True)
    return s


def _mcmahan_state(shape: Shape, classes: int, norm: str) -> StateCounts:  # noqa: ARG001
    c, side, _ = shape
    s = StateCounts()
    s.conv(c, 32, 5)
    s.conv(32, 64, 5)
    s.linear(64 * (side // 4) ** 2, 512)
    s.linear(512, classes, predictor=True)
    return s


def _cifar_cnn_state(shape: Shape, classes: int, norm: str) -> StateCounts:  # noqa: ARG001
    c, side, _ = shape
    s = StateCounts()
    s.conv(c, 64, 5)
    s.conv(64, 64, 5)
    s.linear(64 * ((side + 3) // 4) ** 2, 384)
    s.linear(384, 192)
    s.linear(192, classes, predictor=True)
    return s


def _mlr_state(shape: Shape, classes: int, norm: str) -> StateCounts:  # noqa: ARG001
    c, h, w = shape
    s = StateCounts()
    s.linear(c * h * w, classes, predictor=True)
    return s


def _resnet18_state(shape: Shape, classes: int, norm: str) -> StateCounts:
    s = StateCounts()
    s.conv(shape[0], 64, 3, bias=False)
    s.norm(64, norm)
    cin = 64
    for cout, stride in RESNET_STAGES:
        for b in range(2):
            st = stride if b == 0 else 1
            s.conv(cin, cout, 3, bias=False)
            s.norm(cout, norm)
            s.conv(cout, cout, 3, bias=False)
            s.norm(cout, norm)
            if st != 1 or cin != cout:
                s.conv(cin, cout, 1, bias=False)
                s.norm(cout, norm)
            cin = cout
    s.linear(512, classes, predictor=True)
    return s


def _fixed(dim: int) -> Callable[[Shape], int]:
    """A latent size that does not depend on the input shape."""

    def latent(shape: Shape) -> int:  # noqa: ARG001 (a `latent`'s signature)
        return dim

    return latent


def _flat(shape: Shape) -> int:
    c, h, w = shape
    return c * h * w


BUILTINS: tuple[ModelDecl, ...] = (
    ModelDecl(
        "official-cnn",
        "official CNN",
        "fedgen.models.cnn:build_official",
        "square images (28x28 for MNIST-like data, 84x84 for CelebA)",
        _square_any,
        _fixed(32),
        _official_state,
        description="the official FedGen code's CNN (Conv+BN x2, Linear 784->32 | 32->C)",
    ),
    ModelDecl(
        "mcmahan-cnn",
        "McMahan CNN",
        "fedgen.models.cnn:build_mcmahan",
        "square images",
        _square_any,
        _fixed(512),
        _mcmahan_state,
        ms_factor=8.0,
        description="McMahan et al. 2017's MNIST CNN (Conv5x5 32, 64, FC 512 | 512->C)",
    ),
    ModelDecl(
        "resnet18",
        "ResNet-18",
        "fedgen.models.resnet:build_resnet18",
        "32x32 images (CIFAR)",
        _side_32,
        _fixed(512),
        _resnet18_state,
        norms=("group", "batch"),
        batching="grouped convolutions on a client axis; GroupNorm as K x 2 groups, BatchNorm "
        "with each client's running statistics stacked",
        # Measured: `bench/round_speed.py --model resnet18 --dataset cifar10 --threads 2
        # --execution sequential,batched --algorithms fedavg --rounds 3 --warmup 1
        # --local-steps 2 --batch-size 32` (random 32x32 tensors, 10 clients a round, the two
        # executions interleaved round by round in one process) on the idle 2-core VM:
        # sequential 11.9 s, batched 14.1 s per round (medians of 3), and 0.88x at 4 clients.
        # On the same VM loaded by other jobs (every step ~10x slower) batched came out ahead
        # (2.48x): the ratio depends on the load, and the idle figure, where a worker's slot
        # has its cores to itself, decides `auto`.
        cpu_batched_speedup=0.85,
        speed_note="GroupNorm, 10 clients, 2 threads, idle: 11.9 vs 14.1 s a round, "
        "bench/round_speed.py",
        generator_width=2.0,
        ms_factor=360.0,
        description="ResNet-18 for 32x32 inputs, GroupNorm (Hsieh et al. 2020) or BatchNorm",
    ),
    ModelDecl(
        "cifar-cnn",
        "CIFAR CNN",
        "fedgen.models.cnn:build_cifar_cnn",
        "32x32 images (CIFAR)",
        _side_32,
        _fixed(192),
        _cifar_cnn_state,
        ms_factor=21.0,
        description="McMahan et al. 2017's CIFAR CNN (Conv5x5 64 x2, FC 384, 192 | 192->C)",
    ),
    ModelDecl(
        "mlr",
        "MLR",
        "fedgen.models.cnn:build_mlr",
        "any input, flattened (FedProx's Synthetic: 60 features)",
        _any,
        _flat,
        _mlr_state,
        ms_factor=0.3,
        description="multinomial logistic regression (FedProx's MNIST and Synthetic model)",
    ),
)
