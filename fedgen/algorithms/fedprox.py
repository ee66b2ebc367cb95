"""FedProx: FedAvg plus a proximal pull towards the round's global weights.

Paper: Li et al. 2020, "Federated Optimization in Heterogeneous Networks",
arXiv.org/abs/1812.06127. `paper`: loss + mu/2 * ||w - w_t||^2, i.e. gradient
+ mu (w - w_t). `official` (FedGen's fedoptimizer.py, reference §5.4):
gradient + lamda (w - w_t) + l2 * w.
"""

from __future__ import annotations

import torch

from fedgen.algorithms.base import Algorithm
from fedgen.client import GradHook
from fedgen.federated import UserData
from fedgen.spec import FedProxParams


class FedProx(Algorithm[FedProxParams]):
    """FedAvg whose local gradients get the proximal term."""

    def grad_hook(self, user: UserData, server_round: int) -> GradHook | None:  # noqa: ARG002
        params = self.params
        if params.variant == "paper":
            coef, l2 = params.mu, 0.0
        else:
            coef, l2 = params.lamda, params.l2
        if coef == 0.0 and l2 == 0.0:
            return None
        work: list[torch.Tensor] = [p for p in self.fed.work.parameters() if p.requires_grad]
        anchor = [p.detach().clone() for p in work]  # w_t as received this round

        def hook(grads: list[torch.Tensor]) -> None:
            with torch.no_grad():
                diff = [w - a for w, a in zip(work, anchor, strict=True)]
                torch._foreach_add_(grads, diff, alpha=coef)
                if l2:
                    torch._foreach_add_(grads, work, alpha=l2)

        return hook
