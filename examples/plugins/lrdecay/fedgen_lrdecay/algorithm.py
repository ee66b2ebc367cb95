"""FedAvg-decay: FedAvg whose server takes a shrinking step along the averaged update.

With x_t the global model and avg the round's (weighted) average of the uploads, round t
sets x_{t+1} = x_t + η_s γ^(t−1) (avg − x_t): η_s = 1 and γ = 1 is FedAvg; γ < 1 anneals
the server step, a common server-side schedule (e.g. Reddi et al. 2021, "Adaptive
Federated Optimization", arXiv.org/abs/2003.00295, on server learning rates). The step is
a function of the round alone, so the algorithm keeps no state beyond FedAvg's. Only the
shared parameters move this way; shared BatchNorm statistics are averaged as in FedAvg.
"""

from __future__ import annotations

import torch

from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.context import ClientUpload
from fedgen_lrdecay.params import FedAvgDecayParams


class FedAvgDecay(Algorithm[FedAvgDecayParams]):
    """FedAvg plus a decaying server learning rate (`server_lr` η_s, `server_lr_decay` γ)."""

    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:
        state = self.fed.global_model.state_dict()
        keys = list(self.fed.shared_keys)
        before = {k: state[k].detach().clone() for k in keys}
        self.fed.aggregate(uploads)  # state now holds the average
        lr = self.params.server_lr * self.params.server_lr_decay ** (server_round - 1)
        with torch.no_grad():
            for k in keys:
                state[k].copy_(before[k] + lr * (state[k] - before[k]))
        return {"server_lr": lr}
