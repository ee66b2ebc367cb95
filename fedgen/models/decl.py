"""What a model declaration is: `ModelDecl`, the `StateCounts` it counts its state in and
the `ModelConfig` its builder takes; torch-free.

The declarations live in `fedgen.models.builtin` (the built-ins) and plugins; the registry
(`fedgen.models.registry`) collects them. This module imports nothing of fedgen, so the
declarations, the registry and the torch modules that build models (`fedgen.models.cnn`)
all sit above it. Import `ModelConfig` and the declarations from here.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Shape = tuple[int, int, int]  # (channels, height, width), as `fedgen.data.registry` declares


@dataclass(frozen=True)
class ModelConfig:
    """What a classifier needs to know about its inputs."""

    name: str
    in_channels: int
    image_size: int
    num_classes: int
    norm: str = "none"  # `model.norm` of a model that has the choice (resnet18: group | batch)
    image_width: int | None = None  # W when not equal to `image_size` (flat inputs: 1 x F)
    projection_dim: int = 0  # > 0: a projection head to this width (`add_projection_head`)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(C, H, W) of the inputs."""
        w = self.image_width if self.image_width is not None else self.image_size
        return (self.in_channels, self.image_size, w)


#: Builds the model a `ModelConfig` names: a `fedgen.models.cnn.SplitModel` (that module
#: imports torch, and this one, so the builder's result is not typed here).
Builder = Callable[[ModelConfig], Any]

#: A model name: lower case, digits, '.', '_', '-'; at most 40 characters.
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,39}$")
INT64 = 8


@dataclass
class StateCounts:
    """A model's state dict as numbers of elements per tensor, split the way `Federation`
    splits it: feature-extractor parameters, predictor parameters, buffers (numel, itemsize)."""

    features: list[int] = field(default_factory=list)
    predictor: list[int] = field(default_factory=list)
    buffers: list[tuple[int, int]] = field(default_factory=list)

    def conv(self, cin: int, cout: int, k: int, *, bias: bool = True) -> None:
        self.features.append(cout * cin * k * k)
        if bias:
            self.features.append(cout)

    def linear(self, fin: int, fout: int, *, predictor: bool = False) -> None:
        part = self.predictor if predictor else self.features
        part += [fout * fin, fout]

    def norm(self, n: int, kind: str) -> None:
        """An affine norm layer of `n` channels; a BatchNorm also keeps running statistics."""
        self.features += [n, n]
        if kind == "batch":
            self.buffers += [(n, 4), (n, 4), (1, INT64)]

    @property
    def num_params(self) -> int:
        return sum(self.features) + sum(self.predictor)


@dataclass(frozen=True)
class ModelDecl:
    """A classifier, declared once.

    Attributes
    ----------
    name
        What `model.name` says (`NAME_PATTERN`).
    label
        For people: "ResNet-18 (GroupNorm)".
    builder
        ``"module:function"`` or a callable ``ModelConfig -> SplitModel``.
    inputs
        The input shapes it accepts, in words (forms, the 422's message).
    accepts
        ``accepts((C, H, W)) -> None | reason``: None when it can take inputs of this shape.
    latent
        ``latent((C, H, W)) -> d``: its feature (latent) dimension, the predictor's input
        size: what FedGen's generator produces, MOON contrasts and FedDF distils on.
    state
        ``state((C, H, W), classes, norm) -> StateCounts``: its state dict, element by element,
        torch-free (`fedgen.sizes` estimates checkpoints from it; a test checks it against the
        built module).
    norms
        The `model.norm` values it takes, its default first; () when it has no choice.
    batching
        How `execution: batched` stacks it (`fedgen.batched`), or why it cannot, in words.
    batches
        Whether `fedgen.batched` stacks it (the built module is checked again at run time).
    cpu_batched_speedup
        Batched over sequential round speed on CPU at 10 clients and 2 threads, as measured
        (`bench/round_speed.py --model NAME`); `execution: auto` on the CPU runs it batched
        only when this is above 1. None: not measured, batched as every grouped-convolution
        stack measured so far (the CNNs: 2.0-2.8x).
    speed_note
        Where `cpu_batched_speedup` comes from (said in `execution_reason`).
    generator_width
        FedGen's generator hidden width as a multiple of the preset's (for a latent wider
        than the CNNs' 32 features; `fedgen.generator_presets.preset_dims`).
    ms_factor
        CPU cost per round relative to the official CNN (the study estimates).
    description
        One line for listings.
    """

    name: str
    label: str
    builder: str | Builder
    inputs: str
    accepts: Callable[[Shape], str | None]
    latent: Callable[[Shape], int]
    state: Callable[[Shape, int, str], StateCounts]
    norms: tuple[str, ...] = ()
    batching: str = "grouped convolutions on a client axis"
    batches: bool = True
    cpu_batched_speedup: float | None = None
    speed_note: str = ""
    generator_width: float = 1.0
    ms_factor: float = 1.0
    description: str = ""
    source: str = "fedgen"

    def __post_init__(self) -> None:
        if not NAME_PATTERN.match(self.name):
            raise ValueError(f"model name {self.name!r}: expected {NAME_PATTERN.pattern}")
        if isinstance(self.builder, str) and ":" not in self.builder:
            raise ValueError(
                f"model {self.name}: builder {self.builder!r} is not 'module:function'"
            )
        if not (0.25 <= self.generator_width <= 16):
            raise ValueError(f"model {self.name}: generator_width not in 0.25..16")
        if not self.ms_factor > 0:
            raise ValueError(f"model {self.name}: ms_factor must be positive")

    def load_builder(self) -> Builder:
        """The builder (imports its module now: torch)."""
        if not isinstance(self.builder, str):
            return self.builder
        module, _, attr = self.builder.partition(":")
        fn: Builder = getattr(importlib.import_module(module), attr)
        return fn

    def default_norm(self) -> str:
        return self.norms[0] if self.norms else "none"

    def mismatch(self, shape: Shape) -> str | None:
        """None when it accepts `shape`; else why not, naming what it accepts."""
        why = self.accepts(shape)
        if why is None:
            return None
        c, h, w = shape
        return f"model {self.name} takes {self.inputs}, not {c}x{h}x{w} inputs: {why}"
