"""FedProx: FedAvg plus a proximal pull towards the round's global weights.

Paper: Li et al. 2020, "Federated Optimization in Heterogeneous Networks",
arXiv.org/abs/1812.06127. `paper`: loss + mu/2 * ||w - w_t||^2, i.e. gradient
+ mu (w - w_t). `official` (FedGen's fedoptimizer.py, reference §5.4):
gradient + lamda (w - w_t) + l2 * w.
"""

from __future__ import annotations

import torch

from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.params import FedProxParams
from fedgen.batched import StackedClients
from fedgen.client import GradHook
from fedgen.federated import UserData


class FedProx(Algorithm[FedProxParams]):
    """FedAvg whose local gradients get the proximal term (sequential or batched)."""

    def coefficients(self) -> tuple[float, float]:
        """(proximal coefficient, extra weight decay) of the chosen variant."""
        params = self.params
        if params.variant == "paper":
            return params.mu, 0.0
        return params.lamda, params.l2

    def grad_hook(self, user: UserData, server_round: int) -> GradHook | None:  # noqa: ARG002
        coef, l2 = self.coefficients()
        if coef == 0.0 and l2 == 0.0:
            return None
        return _proximal([p for p in self.fed.work.parameters() if p.requires_grad], coef, l2)

    def batched_grad_hook(self, stack: StackedClients, server_round: int) -> GradHook | None:  # noqa: ARG002
        coef, l2 = self.coefficients()
        if coef == 0.0 and l2 == 0.0:
            return None
        # The stacks hold every client's w, and their values now every client's w_t.
        return _proximal(stack.trainable, coef, l2)


def _proximal(work: list[torch.Tensor], coef: float, l2: float) -> GradHook:
    """grad += coef (w - w_t) + l2 w, w_t the weights as received this round."""
    anchor = [p.detach().clone() for p in work]  # w_t as received this round

    def hook(grads: list[torch.Tensor]) -> None:
        with torch.no_grad():
            diff = [w - a for w, a in zip(work, anchor, strict=True)]
            torch._foreach_add_(grads, diff, alpha=coef)
            if l2:
                torch._foreach_add_(grads, work, alpha=l2)

    return hook
