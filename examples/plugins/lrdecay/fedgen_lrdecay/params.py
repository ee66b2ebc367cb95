"""FedAvg-decay's parameters: the spec's `algorithm` section when `name: fedavg-decay`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fedgen.algorithms.params import AlgorithmParams


class FedAvgDecayParams(AlgorithmParams):
    """FedAvg whose server steps along the averaged update with a decaying learning rate."""

    name: Literal["fedavg-decay"] = "fedavg-decay"
    server_lr: float = Field(
        1.0,
        gt=0.0,
        le=10.0,
        description="η_s: the server's step in round 1 (1 = take the average, FedAvg).",
    )
    server_lr_decay: float = Field(
        0.98,
        gt=0.0,
        le=1.0,
        description="γ: the server's step in round t is η_s γ^(t−1); 1 = no decay.",
    )
