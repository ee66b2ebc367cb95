"""`Federation`: the machinery every algorithm shares, used by composition.

It holds the global model and a working copy, which state keys are sent and
which stay on each user (BatchNorm statistics when kept local, the feature
extractor under `share: predictor`, everything for personalised models), each
user's local state, the per-user batch streams, the parameter average, the
standard evaluation and the checkpoint state of all of it. An algorithm
(`fedgen.algorithms.base.Algorithm`) owns one as `self.fed` and adds only what
its method adds.
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
from fedgen.algorithms.client_state import PerUser
from fedgen.algorithms.context import ClientUpload, RunContext
from fedgen.batched import StackedClients
from fedgen.client import BatchStream
from fedgen.evaluation import Evaluation, Logits, evaluate_per_user, evaluate_shared
from fedgen.federated import UserData
from fedgen.models.cnn import PREDICTOR_PREFIX, SplitModel, build_model

Tensors = dict[str, torch.Tensor]


class Federation:
    """Global model, per-user state, batch streams, aggregation and evaluation.

    `personal=True`: nothing is shared, every user keeps its whole model
    (personalised from the common initial model), as FedDistill does.
    """

    def __init__(self, ctx: RunContext, personal: bool = False) -> None:
        self.ctx = ctx
        self.spec = ctx.spec
        self.fid = ctx.fidelity
        self.data = ctx.data
        self.personal = personal
        self.global_model: SplitModel = build_model(ctx.model_config, ctx.seed).to(ctx.device)
        self.work: SplitModel = copy.deepcopy(self.global_model)
        params = [k for k, _ in self.global_model.named_parameters()]
        self.buffer_keys = [k for k, _ in self.global_model.named_buffers()]
        if personal:
            self.shared_keys: list[str] = []
            self.buffers_shared = False
            self.local_keys = list(self.global_model.state_dict().keys())
        else:
            if self.spec.share == "predictor":
                self.shared_keys = [k for k in params if k.startswith(PREDICTOR_PREFIX)]
            else:
                self.shared_keys = params
            # BN statistics belong to the feature extractor: never sent under `share: predictor`.
            self.buffers_shared = self.fid.bn_buffers == "average" and self.spec.share == "all"
            self.local_keys = [k for k in params if k not in self.shared_keys]
            if not self.buffers_shared:
                self.local_keys += self.buffer_keys
        init = self.global_model.state_dict()
        # Made on a user's first training (client_state.PerUser): memory and checkpoints grow
        # with the users ever sampled; a user never trained holds the initial local state.
        self.user_local = PerUser(
            {k: init[k].detach() for k in self.local_keys}, len(self.data.users)
        )
        # Whose own model `evaluate` runs: None, every user's; a list, those users' alone (the
        # runner's choice for cross-device rounds: their trained users, docs/metrics.md).
        self.eval_users: list[int] | None = None
        seeds = np.random.SeedSequence([ctx.seed, 7]).spawn(len(self.data.users))
        self.streams = [
            BatchStream(u.num_train, s) for u, s in zip(self.data.users, seeds, strict=True)
        ]

    # -- client side ---------------------------------------------------------
    @functools.cached_property
    def broadcast_nbytes(self) -> int:
        """What one model broadcast carries: shared parameters (and buffers when averaged)."""
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
            for k, v in self.user_local.peek(user.index).items():
                work_state[k].copy_(v)
        return self.work

    def batches(self, user: UserData) -> torch.Tensor:
        """The (local_steps, batch_size) training indices of `user`'s next round."""
        pos = self.streams[user.index].take(self.spec.local_steps, self.spec.batch_size)
        return user.train_idx[torch.from_numpy(pos).to(user.train_idx.device)]

    def make_upload(self, user: UserData, model: nn.Module, loss: torch.Tensor) -> ClientUpload:
        """Keep `user`'s local part of `model` and package the shared part."""
        return self.upload_from_state(user, model.state_dict(), loss)

    def stack(self, users: list[UserData]) -> StackedClients:
        """`users`' models as they hold them after the broadcast, stacked (`execution: batched`)."""
        return StackedClients(
            self.work, [self.user_tensors(u.index) for u in users], [u.index for u in users]
        )

    def upload_from_state(self, user: UserData, state: Tensors, loss: torch.Tensor) -> ClientUpload:
        """Keep `user`'s local part of its trained `state` and package the shared part."""
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

    # -- models as tensors ----------------------------------------------------
    def user_tensors(self, index: int) -> Tensors:
        """Full state of user `index`'s model: global shared part plus its local part."""
        state = dict(self.global_model.state_dict())
        state.update(self.user_local.peek(index))
        return state

    def trained_tensors(self, upload: ClientUpload) -> Tensors:
        """Full state of a selected user's model right after its local training."""
        state = dict(self.global_model.state_dict())
        state.update(upload.params)
        state.update(upload.buffers)
        state.update(self.user_local.peek(upload.user))
        return state

    def logits_with(self, state: Tensors) -> Logits:
        """The working model's forward pass (eval mode) with `state` as its tensors."""
        self.work.eval()

        def fn(x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = functional_call(self.work, state, (x,))
            return out

        return fn

    # -- evaluation ----------------------------------------------------------
    def evaluate(self) -> Evaluation:
        """Every user's model on its split; the global protocol per `fidelity.test_protocol`."""
        protocol, batch = self.fid.test_protocol, self.spec.eval_batch_size
        if self.personal:
            # Personalised models: each user's own model on its own split; global = pooled splits.
            return evaluate_per_user(
                lambda k: self.logits_with(self.user_tensors(k)),
                self.data,
                protocol,
                batch,
                users=self.eval_users,
            )
        if not self.local_keys:
            self.global_model.eval()
            return evaluate_shared(self.global_model, self.data, protocol, batch)
        global_logits: Logits | None = None
        if self.spec.share == "all" and protocol == "global":
            # Local BN statistics: the global model uses the users' statistics averaged by size.
            weights = aggregation_weights([u.num_train for u in self.data.users], "samples")
            state = dict(self.global_model.state_dict())
            state.update(weighted_average(list(self.user_local), weights))
            global_logits = self.logits_with(state)
        return evaluate_per_user(
            lambda k: self.logits_with(self.user_tensors(k)),
            self.data,
            protocol,
            batch,
            global_logits,
            self.eval_users,
        )

    # -- checkpoints ---------------------------------------------------------
    def global_state(self) -> Tensors:
        return {k: v.detach().clone() for k, v in self.global_model.state_dict().items()}

    def state_dict(self) -> dict[str, Any]:
        return {
            "global": self.global_state(),
            "user_local": self.user_local.state_dict(),
            "streams": [s.state_dict() for s in self.streams],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.global_model.load_state_dict(state["global"])
        # {"made": {user: tensors}}, or every user's entry as older checkpoints hold
        self.user_local.load_state_dict(state["user_local"])
        for stream, s in zip(self.streams, state["streams"], strict=True):
            stream.load_state_dict(s)
