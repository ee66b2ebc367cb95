"""SCAFFOLD: local steps corrected by control variates, which remove client drift.

Paper: Karimireddy, Kale, Mohri, Reddi, Stich, Suresh 2020, "SCAFFOLD: Stochastic
Controlled Averaging for Federated Learning", ICML, arXiv.org/abs/1910.06378.
Algorithm 1 (the equation numbers are the paper's Algorithm 1 lines):

* line 10, the corrected local step: y_i ← y_i − η_l (g_i(y_i) − c_i + c);
* line 12, option II, the client's new control variate:
  c_i⁺ = c_i − c + (x − y_i) / (K η_l), with K local steps at step size η_l;
* line 13, the upload: (Δy_i, Δc_i) = (y_i − x, c_i⁺ − c_i);
* lines 16-17, the server: x ← x + η_g · mean(Δy_i), c ← c + |S|/N · mean(Δc_i).

The model's Δy mean follows `fidelity.aggregation` (with η_g = 1 SCAFFOLD's model update
is FedAvg's); c stays the mean of all N users' c_i, as line 17 keeps it, unless
`variate_weighting: aggregation` weights the Δc_i mean as the model's (then c is that
weighted running sum, no longer the plain mean of the c_i). Every user's
c_i exists from the start (zeros, as the paper initialises them) and, with c, is part of
the full checkpoint. Both directions carry twice FedAvg's bytes (model and variate).

Under `execution: batched` each stacked client's gradient gets its own c − c_i (stacked in
the stack's client order) and c_i⁺ is computed from its trained y_i as sequentially.
"""

from __future__ import annotations

from typing import Any

import torch

from fedgen.aggregate import aggregation_weights, weighted_average
from fedgen.algorithms import client_state as cs
from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.context import ClientUpload, RunContext
from fedgen.algorithms.params import ScaffoldParams
from fedgen.batched import StackedClients
from fedgen.client import GradHook
from fedgen.federated import UserData

DELTA_C = "delta_c."


class Scaffold(Algorithm[ScaffoldParams]):
    """FedAvg whose local gradients are corrected by c − c_i (option II control variates)."""

    def __init__(self, ctx: RunContext, params: ScaffoldParams) -> None:
        super().__init__(ctx, params)
        self.keys = cs.trained_keys(self.fed)
        self.c: cs.Tensors = cs.zeros_for(self.fed, self.keys)
        self.c_users: cs.PerUser = cs.per_user(self.fed, self.c)

    def broadcast_nbytes(self, user: UserData) -> int:
        return super().broadcast_nbytes(user) + cs.nbytes(self.c)

    def grad_hook(self, user: UserData, server_round: int) -> GradHook | None:  # noqa: ARG002
        c_i = self.c_users[user.index]
        correction = [self.c[k] - c_i[k] for k in self.keys]

        def hook(grads: list[torch.Tensor]) -> None:
            torch._foreach_add_(grads, correction)

        return hook

    def batched_grad_hook(self, stack: StackedClients, server_round: int) -> GradHook:  # noqa: ARG002
        # Each stacked client's own c − c_i, in the stack's client order.
        correction = [
            torch.stack([self.c[k] - self.c_users[u][k] for u in stack.users]) for k in self.keys
        ]

        def hook(grads: list[torch.Tensor]) -> None:
            torch._foreach_add_(grads, correction)

        return hook

    def client_update(self, user: UserData, server_round: int, lr: float) -> ClientUpload:
        x = self._received()
        upload = super().client_update(user, server_round, lr)
        self._new_variate(user, upload, x, lr)
        return upload

    def client_update_batch(
        self, users: list[UserData], server_round: int, lrs: list[float]
    ) -> list[ClientUpload]:
        x = self._received()
        uploads = super().client_update_batch(users, server_round, lrs)
        for user, upload, lr in zip(users, uploads, lrs, strict=True):
            self._new_variate(user, upload, x, lr)
        return uploads

    def _received(self) -> cs.Tensors:
        """x: the global model every client of this round starts from."""
        return {k: v.detach().clone() for k, v in self.fed.global_model.state_dict().items()}

    def _new_variate(self, user: UserData, upload: ClientUpload, x: cs.Tensors, lr: float) -> None:
        """Line 12 (option II) for `user` after its K steps; Δc_i joins its upload."""
        steps = self.spec.local_steps
        c_i = self.c_users[user.index]
        with torch.no_grad():
            new = {
                k: c_i[k] - self.c[k] + (x[k] - upload.params[k]) / (steps * lr) for k in self.keys
            }
            upload.extras.update({DELTA_C + k: new[k] - c_i[k] for k in self.keys})
        self.c_users[user.index] = new

    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:  # noqa: ARG002
        state = self.fed.global_model.state_dict()
        x = {k: state[k].detach().clone() for k in self.keys}
        self.fed.aggregate(uploads)  # the averaged y_i (and shared BN statistics)
        eta_g = self.params.global_lr
        deltas = [{k: u.extras[DELTA_C + k] for k in self.keys} for u in uploads]
        # Line 17: c += |S|/N · mean(Δc_i) = (1/N) Σ Δc_i; or the mean weighted as the model's.
        share = len(uploads) / len(self.data.users)
        mode = "uniform" if self.params.variate_weighting == "uniform" else self.fid.aggregation
        mean_dc = weighted_average(
            deltas, aggregation_weights([u.num_samples for u in uploads], mode)
        )
        with torch.no_grad():
            for k in self.keys:
                if eta_g != 1.0:
                    state[k].copy_(x[k] + eta_g * (state[k] - x[k]))
                self.c[k].add_(mean_dc[k], alpha=share)
            c_norm = torch.stack([v.pow(2).sum() for v in self.c.values()]).sum().sqrt()
        return {"control_variate_norm": float(c_norm)}

    def state_dict(self) -> dict[str, Any]:
        return {
            **self.fed.state_dict(),
            "scaffold_c": cs.cloned(self.c),
            "scaffold_c_users": self.c_users.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.fed.load_state_dict(state)
        cs.restore_into(self.c, state["scaffold_c"])
        cs.restore_all(self.c_users, state["scaffold_c_users"])
