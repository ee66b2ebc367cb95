"""FedAvgM's parameters: the spec's `algorithm` section when `name: fedavgm`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fedgen.spec import AlgorithmParams


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
        0.1,
        gt=0.0,
        le=10.0,
        description="η_s: the server's step; η_s / (1 − β) is the effective step (FedAvg: 1).",
    )
