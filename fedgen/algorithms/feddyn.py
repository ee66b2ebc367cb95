"""FedDyn: a dynamic regulariser makes the users' stationary points the global one.

Paper: Acar, Zhao, Navarro, Mattina, Whatmough, Saligrama 2021, "Federated Learning
Based on Dynamic Regularization", ICLR, arXiv.org/abs/2111.04263.
Algorithm 1 (cited by its steps; we did not have the PDF to number them):

* the local objective (Algorithm 1, the client's problem):
  θ_k^t = argmin L_k(θ) − ⟨∇L_k(θ_k^{t−1}), θ⟩ + α/2 ||θ − θ^{t−1}||², here by the lab's
  local SGD, whose gradient is ∇L_k(θ) − g_k + α (θ − θ^{t−1});
* the user's gradient state (Algorithm 1, from the first-order condition of that problem):
  g_k ← g_k − α (θ_k^t − θ^{t−1}), so g_k tracks ∇L_k(θ_k^t);
* the server state: h^t = h^{t−1} − α (1/m) Σ_{k∈P_t} (θ_k^t − θ^{t−1}), m all users;
* the server model: θ^t = (1/|P_t|) Σ_{k∈P_t} θ_k^t − h^t / α.

The mean over the round's users is the paper's uniform one (h's derivation needs it),
not `fidelity.aggregation`; shared BatchNorm statistics are averaged as in FedAvg. Every
user's g_k (zeros at the start, as in the paper) and h are part of the full checkpoint.

Under `execution: batched` the stacked clients' gradients get their own −g_k (stacked in the
stack's client order) and α (θ − θ^{t−1}); each g_k is then updated as sequentially.
"""

from __future__ import annotations

from typing import Any

import torch

from fedgen.algorithms import client_state as cs
from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.context import ClientUpload, RunContext
from fedgen.algorithms.params import FedDynParams
from fedgen.batched import StackedClients
from fedgen.client import GradHook
from fedgen.federated import UserData


class FedDyn(Algorithm[FedDynParams]):
    """FedAvg's round with FedDyn's linear and proximal terms and its server correction."""

    def __init__(self, ctx: RunContext, params: FedDynParams) -> None:
        super().__init__(ctx, params)
        self.keys = cs.trained_keys(self.fed)
        self.h: cs.Tensors = cs.zeros_for(self.fed, self.keys)
        self.grads: list[cs.Tensors] = cs.per_user(self.fed, self.h)

    def grad_hook(self, user: UserData, server_round: int) -> GradHook | None:  # noqa: ARG002
        work = dict(self.fed.work.named_parameters())
        params: list[torch.Tensor] = [work[k] for k in self.keys]
        return _dynamic(params, [self.grads[user.index][k] for k in self.keys], self.params.alpha)

    def batched_grad_hook(self, stack: StackedClients, server_round: int) -> GradHook:  # noqa: ARG002
        # The stacks hold every client's θ, and their values now θ^{t−1}; g_k in stack order.
        g = [torch.stack([self.grads[u][k] for u in stack.users]) for k in self.keys]
        return _dynamic(stack.trainable, g, self.params.alpha)

    def client_update(self, user: UserData, server_round: int, lr: float) -> ClientUpload:
        before = self._received()
        upload = super().client_update(user, server_round, lr)
        self._update_grad_state(user, upload, before)
        return upload

    def client_update_batch(
        self, users: list[UserData], server_round: int, lrs: list[float]
    ) -> list[ClientUpload]:
        before = self._received()
        uploads = super().client_update_batch(users, server_round, lrs)
        for user, upload in zip(users, uploads, strict=True):
            self._update_grad_state(user, upload, before)
        return uploads

    def _received(self) -> cs.Tensors:
        """θ^{t−1}: the global parameters every client of this round starts from."""
        state = self.fed.global_model.state_dict()
        return {k: state[k].detach().clone() for k in self.keys}

    def _update_grad_state(self, user: UserData, upload: ClientUpload, before: cs.Tensors) -> None:
        """g_k ← g_k − α (θ_k^t − θ^{t−1}), in place."""
        g_k = self.grads[user.index]
        with torch.no_grad():
            for k in self.keys:
                g_k[k].sub_(upload.params[k] - before[k], alpha=self.params.alpha)

    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:  # noqa: ARG002
        alpha, m = self.params.alpha, len(self.data.users)
        state = self.fed.global_model.state_dict()
        before = {k: state[k].detach().clone() for k in self.keys}
        self.fed.aggregate(uploads)  # shared BN statistics; the parameters are set below
        with torch.no_grad():
            for k in self.keys:
                mean = torch.stack([u.params[k] for u in uploads]).mean(dim=0)
                self.h[k].sub_((mean - before[k]) * len(uploads), alpha=alpha / m)
                state[k].copy_(mean - self.h[k] / alpha)
            h_norm = torch.stack([v.pow(2).sum() for v in self.h.values()]).sum().sqrt()
        return {"feddyn_h_norm": float(h_norm)}

    def state_dict(self) -> dict[str, Any]:
        return {
            **self.fed.state_dict(),
            "feddyn_h": cs.cloned(self.h),
            "feddyn_grads": [cs.cloned(t) for t in self.grads],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.fed.load_state_dict(state)
        cs.restore_into(self.h, state["feddyn_h"])
        cs.restore_all(self.grads, state["feddyn_grads"])


def _dynamic(params: list[torch.Tensor], g_k: list[torch.Tensor], alpha: float) -> GradHook:
    """grad += −g_k + α (θ − θ^{t−1}), θ^{t−1} the parameters as received (now)."""
    anchor = [p.detach().clone() for p in params]

    def hook(grads: list[torch.Tensor]) -> None:
        with torch.no_grad():
            torch._foreach_sub_(grads, g_k)
            diff = torch._foreach_sub(params, anchor)
            torch._foreach_add_(grads, diff, alpha=alpha)

    return hook
