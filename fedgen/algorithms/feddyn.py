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

Two variants the authors' released code is reported to use (not checked against it):

* `evaluate: average`: a round's metrics (test and validation) evaluate the plain mean
  (1/|P_t|) Σ θ_k^t (with the averaged BatchNorm statistics) instead of θ^t; θ^t is still
  what is broadcast, trained from and saved as the run's final 'model' checkpoint. The mean
  is made by the round's `server_update` and read only by that round's evaluation (twins
  included), so it is not checkpointed: a resumed run trains a round before it evaluates.
  Round 0 evaluates the initial model, as every algorithm does.
* `alpha_scaling: inverse_share`: user k uses α_k = α · mean_n / n_k (n_k its training
  samples, mean_n the mean over all m users) in its local term and its g_k update. The
  server keeps h the mean of all users' g_k, as the paper's h is (g_k and h start at zero
  and move by the same steps): h ← h − (1/m) Σ_{k∈P_t} α_k (θ_k^t − θ^{t−1}). θ^t keeps
  − h/α: α is the sample-weighted mean of the α_k (Σ_k (n_k/N) α_k = α), and with equal
  shares every α_k is α, which is the paper's algorithm exactly.

Under `execution: batched` the stacked clients' gradients get their own −g_k (stacked in the
stack's client order) and α (θ − θ^{t−1}) (α_k, stacked alike, under `inverse_share`); each
g_k is then updated as sequentially.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from fedgen.algorithms import client_state as cs
from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.context import ClientUpload, RunContext
from fedgen.algorithms.params import FedDynParams
from fedgen.batched import StackedClients
from fedgen.client import GradHook
from fedgen.evaluation import Evaluation, Logits
from fedgen.federated import UserData


def user_alphas(alpha: float, scaling: str, train_sizes: Sequence[int]) -> list[float]:
    """Each user's α_k: α (`uniform`), or α · mean_n / n_k (`inverse_share`).

    Every user holds training samples (the partition refuses an empty one), so n_k ≥ 1.
    """
    if scaling == "uniform":
        return [alpha] * len(train_sizes)
    mean_n = sum(train_sizes) / len(train_sizes)
    return [alpha * mean_n / n for n in train_sizes]


class FedDyn(Algorithm[FedDynParams]):
    """FedAvg's round with FedDyn's linear and proximal terms and its server correction."""

    def __init__(self, ctx: RunContext, params: FedDynParams) -> None:
        super().__init__(ctx, params)
        self.keys = cs.trained_keys(self.fed)
        self.h: cs.Tensors = cs.zeros_for(self.fed, self.keys)
        self.grads: cs.PerUser = cs.per_user(self.fed, self.h)
        self.alphas = user_alphas(
            params.alpha, params.alpha_scaling, [u.num_train for u in self.data.users]
        )
        # `evaluate: average`: the plain mean of the last round's uploads, which its
        # evaluation reads (None before round 1 and under `corrected`).
        self.average: cs.Tensors | None = None

    def grad_hook(self, user: UserData, server_round: int) -> GradHook | None:  # noqa: ARG002
        work = dict(self.fed.work.named_parameters())
        params: list[torch.Tensor] = [work[k] for k in self.keys]
        g_k = [self.grads[user.index][k] for k in self.keys]
        return _dynamic(params, g_k, self.alphas[user.index])

    def batched_grad_hook(self, stack: StackedClients, server_round: int) -> GradHook:  # noqa: ARG002
        # The stacks hold every client's θ, and their values now θ^{t−1}; g_k in stack order.
        g = [torch.stack([self.grads[u][k] for u in stack.users]) for k in self.keys]
        if self.params.alpha_scaling == "uniform":
            return _dynamic(stack.trainable, g, self.params.alpha)
        first = stack.trainable[0]
        per_client = torch.tensor(
            [self.alphas[u] for u in stack.users], dtype=first.dtype, device=first.device
        )
        return _dynamic(stack.trainable, g, self.params.alpha, per_client)

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
        """g_k ← g_k − α_k (θ_k^t − θ^{t−1}), in place."""
        g_k, alpha_k = self.grads[user.index], self.alphas[user.index]
        with torch.no_grad():
            for k in self.keys:
                g_k[k].sub_(upload.params[k] - before[k], alpha=alpha_k)

    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:  # noqa: ARG002
        alpha, m = self.params.alpha, len(self.data.users)
        uniform = self.params.alpha_scaling == "uniform"
        state = self.fed.global_model.state_dict()
        before = {k: state[k].detach().clone() for k in self.keys}
        self.fed.aggregate(uploads)  # shared BN statistics; the parameters are set below
        average: cs.Tensors = {}
        with torch.no_grad():
            for k in self.keys:
                mean = torch.stack([u.params[k] for u in uploads]).mean(dim=0)
                if uniform:  # α (1/m) Σ (θ_k − θ^{t−1}) = α (|P_t|/m) (mean − θ^{t−1})
                    self.h[k].sub_((mean - before[k]) * len(uploads), alpha=alpha / m)
                else:
                    steps = [(u.params[k] - before[k]) * self.alphas[u.user] for u in uploads]
                    self.h[k].sub_(torch.stack(steps).sum(dim=0), alpha=1.0 / m)
                state[k].copy_(mean - self.h[k] / alpha)
                average[k] = mean
            h_norm = torch.stack([v.pow(2).sum() for v in self.h.values()]).sum().sqrt()
        self.average = average if self.params.evaluate == "average" else None
        return {"feddyn_h_norm": float(h_norm)}

    # -- evaluation ----------------------------------------------------------
    def evaluate(self) -> Evaluation:
        """θ^t's metrics, or (`evaluate: average`) the plain mean's, θ^t put back after."""
        if self.average is None:
            return super().evaluate()
        # The Federation evaluates its global model (and users' models built from it): show
        # it the mean for the evaluation, then restore the broadcast θ^t exactly.
        state = self.fed.global_model.state_dict()
        broadcast = {k: state[k].detach().clone() for k in self.average}
        try:
            with torch.no_grad():
                for k, v in self.average.items():
                    state[k].copy_(v)
            return self.fed.evaluate()
        finally:
            with torch.no_grad():
                for k, v in broadcast.items():
                    state[k].copy_(v)

    def validation_logits(self) -> Logits:
        """The evaluated model's forward pass: θ^t's, or the plain mean's (`average`)."""
        if self.average is None:
            return super().validation_logits()
        state = dict(self.fed.global_model.state_dict())
        state.update(self.average)
        return self.fed.logits_with(state)

    # -- checkpoints ---------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            **self.fed.state_dict(),
            "feddyn_h": cs.cloned(self.h),
            "feddyn_grads": self.grads.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.fed.load_state_dict(state)
        cs.restore_into(self.h, state["feddyn_h"])
        cs.restore_all(self.grads, state["feddyn_grads"])


def _dynamic(
    params: list[torch.Tensor],
    g_k: list[torch.Tensor],
    alpha: float,
    per_client: torch.Tensor | None = None,
) -> GradHook:
    """grad += −g_k + α (θ − θ^{t−1}), θ^{t−1} the parameters as received (now).

    `per_client` (K,): stacked clients' own α_k in stack order, in place of α (each
    parameter's leading axis is the client's).
    """
    anchor = [p.detach().clone() for p in params]
    scales = (
        None
        if per_client is None
        else [per_client.view(-1, *(1,) * (p.dim() - 1)) for p in params]  # (K, 1, ..., 1)
    )

    def hook(grads: list[torch.Tensor]) -> None:
        with torch.no_grad():
            torch._foreach_sub_(grads, g_k)
            diff = torch._foreach_sub(params, anchor)
            if scales is None:
                torch._foreach_add_(grads, diff, alpha=alpha)
            else:
                torch._foreach_mul_(diff, scales)
                torch._foreach_add_(grads, diff)

    return hook
