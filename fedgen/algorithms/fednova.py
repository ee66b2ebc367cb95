"""FedNova: normalised averaging, so users doing more local steps do not pull harder.

Paper: Wang, Liu, Liang, Joshi, Poor 2020, "Tackling the Objective Inconsistency Problem
in Heterogeneous Federated Optimization", NeurIPS, arXiv.org/abs/2007.07481, §4. For
local SGD without momentum (a_i = 1 per step, so ||a_i||₁ = τ_i):

* the normalised update of user i (eq. (6)): d_i = (x − y_i) / (η τ_i), y_i after τ_i steps;
* the server (eq. (7)): x ← x − τ_eff Σ_i p_i η d_i, τ_eff = Σ_i p_i τ_i,

with p_i the round's weights (`fidelity.aggregation`; the paper's p_i are data sizes).
With each user's own step size η_i (the lab's per-user lr clock) η d_i is (x − y_i) / τ_i,
so the server step is x + Σ_i p_i (τ_eff / τ_i)(y_i − x); when every τ_i is equal it is
FedAvg's average.

Heterogeneous local work: `local_steps_spread` s draws τ_i uniformly from
max(1, T − s) .. T (T = `local_steps`) for each selected user, seeded by (seed, round,
user), so a resumed run draws the same and no extra state is kept. Each round records the
steps' mean, min and max and τ_eff among its metrics.
"""

from __future__ import annotations

import numpy as np
import torch

from fedgen.aggregate import aggregation_weights
from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.context import ClientUpload
from fedgen.algorithms.params import FedNovaParams
from fedgen.client import local_sgd
from fedgen.federated import UserData

# Separates FedNova's step draws from the run's other seeded streams.
STEPS_STREAM = 23


class FedNova(Algorithm[FedNovaParams]):
    """FedAvg with per-user local steps τ_i and FedNova's normalised average."""

    def local_steps(self, user: UserData, server_round: int) -> int:
        """τ_i of `user` in `server_round` (a pure function of the seed, round and user)."""
        top = self.spec.local_steps
        low = max(1, top - self.params.local_steps_spread)
        if low == top:
            return top
        seq = np.random.SeedSequence([self.ctx.seed, STEPS_STREAM, server_round, user.index])
        return int(np.random.default_rng(seq).integers(low, top + 1))

    def client_update(self, user: UserData, server_round: int, lr: float) -> ClientUpload:
        steps = self.local_steps(user, server_round)
        model = self.fed.load_user_model(user)
        pos = self.fed.streams[user.index].take(steps, self.spec.batch_size)
        batches = user.train_idx[torch.from_numpy(pos).to(user.train_idx.device)]
        loss = local_sgd(
            model, self.data.train_x, self.data.train_y, batches, lr, augment=self.data.augment
        )
        upload = self.fed.make_upload(user, model, loss)
        # τ_i travels with the update (the paper's client sends its normaliser).
        upload.extras["tau"] = torch.tensor(float(steps), device=loss.device)
        return upload

    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:  # noqa: ARG002
        taus = [float(u.extras["tau"]) for u in uploads]
        p = aggregation_weights([u.num_samples for u in uploads], self.fid.aggregation)
        tau_eff = sum(pi * t for pi, t in zip(p, taus, strict=True))
        state = self.fed.global_model.state_dict()
        keys = list(uploads[0].params)
        x = {k: state[k].detach().clone() for k in keys}
        self.fed.aggregate(uploads)  # shared BN statistics; the parameters are set below
        with torch.no_grad():
            for k in keys:
                step = sum(
                    (u.params[k] - x[k]) * (pi * tau_eff / t)
                    for u, pi, t in zip(uploads, p, taus, strict=True)
                )
                state[k].copy_(x[k] + step)
        return {
            "local_steps_mean": float(np.mean(taus)),
            "local_steps_min": min(taus),
            "local_steps_max": max(taus),
            "tau_eff": tau_eff,
        }
