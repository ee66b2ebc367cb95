"""Parameters of the non-IID baselines reviewers ask for (issue 32), torch-free.

SCAFFOLD, FedDyn, MOON, FedNova and the server optimisers (FedAdam, FedYogi, FedAvgM):
each class is the spec's `algorithm` section for its name. They live here rather than in
`fedgen.spec` (which holds the paper's algorithms) so that module stays small; the registry
(`fedgen.algorithms.builtin`) makes them part of the spec's discriminated `algorithm`
field exactly as it does the paper's. Every bound is explicit, so an out-of-range value is
refused naming `algorithm.<name>.<field>` and the limit. Defaults are the values each
paper recommends for a small CNN (see each algorithm's module for the source).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fedgen.spec import AlgorithmParams
from fedgen.spec_base import MAX_LOCAL_STEPS


class ScaffoldParams(AlgorithmParams):
    """SCAFFOLD (Karimireddy et al. 2020): control variates correct client drift (option II)."""

    name: Literal["scaffold"] = "scaffold"
    global_lr: float = Field(
        1.0,
        gt=0.0,
        le=10.0,
        description="η_g: the server's step along the averaged update (1 = take the average).",
    )


class FedDynParams(AlgorithmParams):
    """FedDyn (Acar et al. 2021): a dynamic regulariser aligns local and global optima."""

    name: Literal["feddyn"] = "feddyn"
    alpha: float = Field(
        0.01,
        gt=0.0,
        le=10.0,
        description="α: weight of the dynamic regulariser α/2·||θ − θ_t||² (and 1/α scales h).",
    )


class MoonParams(AlgorithmParams):
    """MOON (Li, He, Song 2021): a model-contrastive loss on the feature extractor's output."""

    name: Literal["moon"] = "moon"
    mu: float = Field(
        1.0, ge=0.0, le=100.0, description="μ: weight of the model-contrastive loss (0 = FedAvg)."
    )
    temperature: float = Field(
        0.5, gt=0.0, le=100.0, description="τ: temperature of the contrastive softmax."
    )


class FedNovaParams(AlgorithmParams):
    """FedNova (Wang et al. 2020): normalised averaging of heterogeneous local work."""

    name: Literal["fednova"] = "fednova"
    local_steps_spread: int = Field(
        0,
        ge=0,
        le=MAX_LOCAL_STEPS,
        description="Each selected user trains τ_i steps, drawn uniformly (seeded by seed, round "
        "and user) from max(1, local_steps − spread) to local_steps; 0 = every user local_steps.",
    )


class _ServerAdaptiveParams(AlgorithmParams):
    """What FedAdam and FedYogi share (Reddi et al. 2021, Algorithm 2)."""

    server_lr: float = Field(
        0.01, gt=0.0, le=10.0, description="η: the server optimiser's step size."
    )
    beta1: float = Field(
        0.9, ge=0.0, lt=1.0, description="β₁: decay of the pseudo-gradient's first moment."
    )
    beta2: float = Field(
        0.99, ge=0.0, lt=1.0, description="β₂: decay of the pseudo-gradient's second moment."
    )
    tau: float = Field(
        1e-3,
        gt=0.0,
        le=10.0,
        description="τ: adaptivity, added to √v (and v starts at τ²); larger = less adaptive.",
    )


class FedAdamParams(_ServerAdaptiveParams):
    """FedAdam (Reddi et al. 2021): Adam on the round's pseudo-gradient, at the server."""

    name: Literal["fedadam"] = "fedadam"


class FedYogiParams(_ServerAdaptiveParams):
    """FedYogi (Reddi et al. 2021): Yogi on the round's pseudo-gradient, at the server."""

    name: Literal["fedyogi"] = "fedyogi"


class FedAvgMParams(AlgorithmParams):
    """FedAvgM (Hsu et al. 2019): FedAvg with server momentum on the averaged update."""

    name: Literal["fedavgm"] = "fedavgm"
    server_momentum: float = Field(
        0.9,
        ge=0.0,
        lt=1.0,
        description="β: the server's momentum on the round's pseudo-gradient; 0 = none.",
    )
    server_lr: float = Field(
        1.0,
        gt=0.0,
        le=10.0,
        description="η_s: the server's step; η_s / (1 − β) is the effective step (FedAvg: 1).",
    )
