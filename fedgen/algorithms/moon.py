"""MOON: model-contrastive federated learning on the feature extractor's representation.

Paper: Li, He, Song 2021, "Model-Contrastive Federated Learning", CVPR,
arXiv.org/abs/2103.16257, §3.3 and Algorithm 1. With z = R_w(x) the representation of
the model being trained, z_glob = R_{w^t}(x) of the round's global model and
z_prev = R_{w_i^{t−1}}(x) of the user's own model from its previous local training:

* the model-contrastive loss (§3.3, eq. (3) in the CVPR version):
  ℓ_con = −log( exp(sim(z, z_glob)/τ) / (exp(sim(z, z_glob)/τ) + exp(sim(z, z_prev)/τ)) ),
  sim the cosine similarity, τ the temperature;
* the local objective (§3.3, eq. (4)): ℓ = ℓ_sup(w; (x, y)) + μ ℓ_con(w; w_i^{t−1}, w^t; x).

The server is FedAvg's. The network is the paper's (§3.2) when `projection_dim` > 0: the
model's `features` (the base encoder), a projection head (a 2-layer MLP, features d -> d ->
projection_dim, ReLU between) and the predictor (the output layer) reading the head's output;
z is the head's output. The head is built into the model itself (`ModelConfig.projection_dim`,
`fedgen.models.cnn.add_projection_head`), so it is part of the federated model: broadcast,
uploaded (bytes_down, bytes_up), averaged, and in every checkpoint. With `projection_dim` 0
(the default) there is no head and z is the `features` output (the predictor's input, 32-d
for the official CNN), as before the option existed. The reference models run in eval mode
(their BatchNorm statistics are used, never updated). Every user's previous model (its whole
state; the initial model until it first trains, as in the paper) is part of the full
checkpoint.
"""

from __future__ import annotations

import copy
from typing import Any, cast

import torch
from torch import nn
from torch.func import functional_call

from fedgen.algorithms import client_state as cs
from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.context import ClientUpload, RunContext
from fedgen.algorithms.params import MoonParams
from fedgen.client import LossFn
from fedgen.federated import UserData
from fedgen.models.cnn import PREDICTOR_PREFIX, SplitModel


class Moon(Algorithm[MoonParams]):
    """FedAvg whose local loss adds μ × the model-contrastive loss."""

    def __init__(self, ctx: RunContext, params: MoonParams) -> None:
        super().__init__(ctx, params)
        self.ref: SplitModel = copy.deepcopy(self.fed.global_model).eval()
        self.encoder = _Encoder(self.ref).eval()
        self.prev: cs.PerUser = cs.per_user(self.fed, self.fed.global_state())

    def _representation(self, state: cs.Tensors, x: torch.Tensor) -> torch.Tensor:
        """R_w(x) of the model whose tensors are `state` (a whole model's): (B, latent_dim)."""
        encoder_state = {k: v for k, v in state.items() if not k.startswith(PREDICTOR_PREFIX)}
        with torch.no_grad():
            z: torch.Tensor = functional_call(self.encoder, encoder_state, (x,))
        return z

    def local_loss(self, user: UserData, server_round: int) -> LossFn:  # noqa: ARG002
        glob = self.fed.user_tensors(user.index)  # w^t as this user receives it
        prev = self.prev[user.index]
        mu, tau = self.params.mu, self.params.temperature

        def loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor, step: int) -> torch.Tensor:  # noqa: ARG001
            split = cast(SplitModel, model)  # the federation's working model
            z = split.extract(x)
            sup = nn.functional.cross_entropy(split.classify(z), y)
            if mu == 0.0:
                return sup
            pos = nn.functional.cosine_similarity(z, self._representation(glob, x), dim=-1)
            neg = nn.functional.cosine_similarity(z, self._representation(prev, x), dim=-1)
            logits = torch.stack([pos, neg], dim=1) / tau
            target = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
            return sup + mu * nn.functional.cross_entropy(logits, target)

        return loss

    def client_update(self, user: UserData, server_round: int, lr: float) -> ClientUpload:
        upload = super().client_update(user, server_round, lr)
        self.prev[user.index] = cs.cloned(self.fed.work.state_dict())
        return upload

    def state_dict(self) -> dict[str, Any]:
        return {**self.fed.state_dict(), "moon_prev": self.prev.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.fed.load_state_dict(state)
        cs.restore_all(self.prev, state["moon_prev"])


class _Encoder(nn.Module):
    """R_w: a `SplitModel` without its predictor (`SplitModel.extract`), sharing its modules,
    so a whole model's state minus the predictor's entries is this module's state."""

    def __init__(self, model: SplitModel) -> None:
        super().__init__()
        self.features = model.features
        self.projection = model.projection

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z: torch.Tensor = self.features(x)
        if self.projection is not None:
            z = self.projection(z)
        return z
