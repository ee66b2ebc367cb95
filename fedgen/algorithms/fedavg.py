"""FedAvg: local SGD on each selected user, then a (weighted) parameter average.

Paper: McMahan et al. 2017, "Communication-Efficient Learning of Deep Networks
from Decentralized Data", arXiv.org/abs/1602.05629.

This class also carries what every algorithm here shares: the global model, the
per-user state that never leaves a user (BatchNorm statistics when they are kept
local, the feature extractor under `share: predictor`), the per-user batch
streams, and evaluation. Other algorithms override the hooks `local_loss`,
`grad_hook`, `server_update` and `evaluate`.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from fedgen.aggregate import aggregation_weights, state_nbytes, weighted_average
from fedgen.algorithms.base import Algorithm, ClientUpload, RunContext
from fedgen.client import BatchStream, GradHook, LossFn, cross_entropy_loss, local_sgd
from fedgen.evaluation import Evaluation, Logits, evaluate_per_user, evaluate_shared
from fedgen.events import Checkpoint
from fedgen.federated import UserData
from fedgen.models.cnn import PREDICTOR_PREFIX, SplitModel, build_model

Tensors = dict[str, torch.Tensor]


class FedAvg(Algorithm):
    """FedAvg with selectable weighting (`fidelity.aggregation`) and BN handling."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.spec = ctx.spec
        self.fid = ctx.fidelity
        self.data = ctx.data
        self.global_model: SplitModel = build_model(ctx.model_config, ctx.seed).to(ctx.device)
        self.work: SplitModel = copy.deepcopy(self.global_model)
        params = [k for k, _ in self.global_model.named_parameters()]
        if self.spec.share == "predictor":
            self.shared_keys = [k for k in params if k.startswith(PREDICTOR_PREFIX)]
        else:
            self.shared_keys = params
        self.buffer_keys = [k for k, _ in self.global_model.named_buffers()]
        # BN statistics belong to the feature extractor: never sent under `share: predictor`.
        self.buffers_shared = self.fid.bn_buffers == "average" and self.spec.share == "all"
        self.local_keys = [k for k in params if k not in self.shared_keys]
        if not self.buffers_shared:
            self.local_keys += self.buffer_keys
        init = self.global_model.state_dict()
        self.user_local: list[Tensors] = [
            {k: init[k].detach().clone() for k in self.local_keys} for _ in self.data.users
        ]
        seeds = np.random.SeedSequence([ctx.seed, 7]).spawn(len(self.data.users))
        self.streams = [
            BatchStream(u.num_train, s) for u, s in zip(self.data.users, seeds, strict=True)
        ]

    # -- client side ---------------------------------------------------------
    def broadcast_nbytes(self, user: UserData) -> int:  # noqa: ARG002
        return self._broadcast_nbytes

    @functools.cached_property
    def _broadcast_nbytes(self) -> int:
        """What one broadcast carries: the shared parameters (and buffers when averaged); fixed."""
        sent = {k: v for k, v in self.global_model.state_dict().items() if k in self.shared_keys}
        if self.buffers_shared:
            sent.update(dict(self.global_model.named_buffers()))
        return state_nbytes(sent)

    def load_user_model(self, user: UserData) -> SplitModel:
        """The working model set to what `user` holds after the broadcast."""
        with torch.no_grad():
            work_state = self.work.state_dict()
            global_state = self.global_model.state_dict()
            for k in self.shared_keys:
                work_state[k].copy_(global_state[k])
            if self.buffers_shared:
                for k in self.buffer_keys:
                    work_state[k].copy_(global_state[k])
            for k, v in self.user_local[user.index].items():
                work_state[k].copy_(v)
        return self.work

    def local_loss(self, user: UserData, server_round: int) -> LossFn:  # noqa: ARG002
        """The objective of one local step; FedGen adds its generator terms here."""
        return cross_entropy_loss

    def grad_hook(self, user: UserData, server_round: int) -> GradHook | None:  # noqa: ARG002
        """Edits gradients before each step; FedProx adds its proximal term here."""
        return None

    def batches(self, user: UserData) -> torch.Tensor:
        pos = self.streams[user.index].take(self.spec.local_steps, self.spec.batch_size)
        return user.train_idx[torch.from_numpy(pos).to(user.train_idx.device)]

    def client_update(self, user: UserData, server_round: int, lr: float) -> ClientUpload:
        model = self.load_user_model(user)
        loss = local_sgd(
            model,
            self.data.train_x,
            self.data.train_y,
            self.batches(user),
            lr,
            self.local_loss(user, server_round),
            self.grad_hook(user, server_round),
        )
        return self.make_upload(user, model, loss)

    def make_upload(self, user: UserData, model: nn.Module, loss: torch.Tensor) -> ClientUpload:
        state = model.state_dict()
        self.user_local[user.index] = {k: state[k].detach().clone() for k in self.local_keys}
        return ClientUpload(
            user=user.index,
            num_samples=user.num_train,
            params={k: state[k].detach().clone() for k in self.shared_keys},
            buffers={k: state[k].detach().clone() for k in self.buffer_keys}
            if self.buffers_shared
            else {},
            train_loss=loss,
        )

    # -- server side ---------------------------------------------------------
    def aggregate(self, uploads: list[ClientUpload]) -> None:
        """Average the uploads into the global model (parameters, and buffers if shared)."""
        weights = aggregation_weights([u.num_samples for u in uploads], self.fid.aggregation)
        new = weighted_average([u.params for u in uploads], weights)
        if self.buffers_shared:
            new.update(weighted_average([u.buffers for u in uploads], weights))
        with torch.no_grad():
            state = self.global_model.state_dict()
            for k, v in new.items():
                state[k].copy_(v)

    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:  # noqa: ARG002
        self.aggregate(uploads)
        return {}

    # -- evaluation ----------------------------------------------------------
    def user_tensors(self, index: int) -> Tensors:
        """Full state of user `index`'s model: global shared part plus its local part."""
        state = dict(self.global_model.state_dict())
        state.update(self.user_local[index])
        return state

    def _logits_with(self, state: Tensors) -> Logits:
        self.work.eval()

        def fn(x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = functional_call(self.work, state, (x,))
            return out

        return fn

    def evaluate(self) -> Evaluation:
        protocol, batch = self.fid.test_protocol, self.spec.eval_batch_size
        if not self.local_keys:
            self.global_model.eval()
            return evaluate_shared(self.global_model, self.data, protocol, batch)
        global_logits: Logits | None = None
        if self.spec.share == "all" and protocol == "global":
            # Local BN statistics: the global model uses the users' statistics averaged by size.
            weights = aggregation_weights([u.num_train for u in self.data.users], "samples")
            state = dict(self.global_model.state_dict())
            state.update(weighted_average(self.user_local, weights))
            global_logits = self._logits_with(state)
        return evaluate_per_user(
            lambda k: self._logits_with(self.user_tensors(k)),
            self.data,
            protocol,
            batch,
            global_logits,
        )

    # -- checkpoints ---------------------------------------------------------
    def global_state(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.global_model.state_dict().items()}

    def checkpoints(self, server_round: int) -> list[Checkpoint]:  # noqa: ARG002
        return []

    def state_dict(self) -> dict[str, Any]:
        return {
            "global": self.global_state(),
            "user_local": self.user_local,
            "streams": [s.state_dict() for s in self.streams],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.global_model.load_state_dict(state["global"])
        self.user_local = [
            {k: v.to(self.ctx.device) for k, v in d.items()} for d in state["user_local"]
        ]
        for stream, s in zip(self.streams, state["streams"], strict=True):
            stream.load_state_dict(s)
