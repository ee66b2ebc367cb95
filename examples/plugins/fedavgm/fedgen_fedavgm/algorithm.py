"""FedAvgM: FedAvg whose server steps along the averaged update with momentum.

Paper: Hsu, Qi, Brown 2019, "Measuring the Effects of Non-Identical Data Distribution
for Federated Visual Classification", arXiv.org/abs/1909.06335. With the round's
pseudo-gradient Δ = w_t − avg(w_k): v ← β v + Δ, w_{t+1} = w_t − η_s v. Only the shared
parameters move this way; shared BatchNorm statistics are averaged as in FedAvg.
"""

from __future__ import annotations

from typing import Any

import torch

from fedgen.algorithms.base import Algorithm, ClientUpload, RunContext
from fedgen_fedavgm.params import FedAvgMParams


class FedAvgM(Algorithm[FedAvgMParams]):
    """FedAvg plus server momentum (`server_momentum` β, `server_lr` η_s)."""

    def __init__(self, ctx: RunContext, params: FedAvgMParams) -> None:
        super().__init__(ctx, params)
        state = self.fed.global_model.state_dict()
        # The momentum buffer of every parameter the server averages.
        self.velocity: dict[str, torch.Tensor] = {
            k: torch.zeros_like(state[k]) for k in self.fed.shared_keys
        }

    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:  # noqa: ARG002
        state = self.fed.global_model.state_dict()
        before = {k: state[k].detach().clone() for k in self.velocity}
        self.fed.aggregate(uploads)  # state now holds the average
        beta, lr = self.params.server_momentum, self.params.server_lr
        sq = 0.0
        with torch.no_grad():
            for k, v in self.velocity.items():
                v.mul_(beta).add_(before[k] - state[k])
                state[k].copy_(before[k] - lr * v)
                sq += float(v.pow(2).sum())
        return {"server_velocity_norm": sq**0.5}

    def state_dict(self) -> dict[str, Any]:
        return {
            **self.fed.state_dict(),
            "velocity": {k: v.clone() for k, v in self.velocity.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.fed.load_state_dict(state)
        for k, v in state["velocity"].items():
            self.velocity[k].copy_(v)
