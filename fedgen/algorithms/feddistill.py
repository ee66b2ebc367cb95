"""FedDistill and FedDistill+ (official name FedDistill-FL): users share per-label logits.

Paper: Jeong et al. 2018, "Communication-Efficient On-Device Machine Learning:
Federated Distillation and Augmentation", arxiv.org/abs/1811.11479; baselines of
Zhu, Hong, Zhou 2021 (arxiv.org/abs/2105.10056, Table 1); reference §5.6.

Each user keeps a tracker of its logits summed per true label (C x C, counts start
at 1) over all its local steps, cumulative across rounds as in the official code,
but with detached values: the official tracker keeps the autograd history, so its
graph grows every step (reference §7). A selected user uploads its per-label mean
logits; the server's global per-label logits are the uniform mean over the round's
selected users. Once they exist, a user's loss is CE + reg_alpha * KL(softmax(
global[y]) || p_model(.|x)). FedDistill shares no parameters (personalised models);
FedDistill+ also averages parameters (all, or only the predictor).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

from fedgen.aggregate import state_nbytes
from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.context import ClientUpload, RunContext
from fedgen.algorithms.params import FedDistillParams, FedDistillPlusParams
from fedgen.client import LossFn
from fedgen.federated import UserData


class FedDistill(Algorithm[FedDistillParams | FedDistillPlusParams]):
    """Personalised models regularised towards the global per-label logits."""

    personal = True  # everything stays on the user: its model is personalised from the common init

    def __init__(self, ctx: RunContext, params: FedDistillParams | FedDistillPlusParams) -> None:
        super().__init__(ctx, params)
        self.reg_alpha = params.reg_alpha
        c, dev = self.data.num_classes, ctx.device
        self.tracker_sum = torch.zeros(len(self.data.users), c, c, device=dev)
        self.tracker_count = torch.ones(len(self.data.users), c, device=dev)
        self.global_logits: torch.Tensor | None = None

    def broadcast_nbytes(self, user: UserData) -> int:
        extra = 0 if self.global_logits is None else state_nbytes({"g": self.global_logits})
        return super().broadcast_nbytes(user) + extra

    def local_loss(self, user: UserData, server_round: int) -> LossFn:  # noqa: ARG002
        k, target_table = user.index, self.global_logits
        sums, counts = self.tracker_sum[k], self.tracker_count[k]
        ones = torch.ones(self.spec.batch_size, device=sums.device)

        def loss_fn(model: nn.Module, x: torch.Tensor, y: torch.Tensor, step: int) -> torch.Tensor:  # noqa: ARG001
            logits = model(x)
            with torch.no_grad():
                sums.index_add_(0, y, logits.detach())
                counts.index_add_(0, y, ones[: y.shape[0]])
            loss = F.cross_entropy(logits, y)
            if target_table is not None and self.reg_alpha > 0.0:
                target = torch.softmax(target_table.index_select(0, y), dim=1)
                kl = F.kl_div(torch.log_softmax(logits, 1), target, reduction="batchmean")
                loss = loss + self.reg_alpha * kl
            return loss

        return loss_fn

    def client_update(self, user: UserData, server_round: int, lr: float) -> ClientUpload:
        upload = super().client_update(user, server_round, lr)
        k = user.index
        upload.extras["label_logits"] = self.tracker_sum[k] / self.tracker_count[k].unsqueeze(1)
        return upload

    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:  # noqa: ARG002
        self.global_logits = torch.stack([u.extras["label_logits"] for u in uploads]).mean(0)
        if not self.personal:
            self.fed.aggregate(uploads)
        return {}

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["feddistill"] = {
            "tracker_sum": self.tracker_sum.clone(),
            "tracker_count": self.tracker_count.clone(),
            "global_logits": self.global_logits,
        }
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        d = state["feddistill"]
        self.tracker_sum = d["tracker_sum"].to(self.ctx.device)
        self.tracker_count = d["tracker_count"].to(self.ctx.device)
        g = d["global_logits"]
        self.global_logits = None if g is None else g.to(self.ctx.device)


class FedDistillPlus(FedDistill):
    """FedDistill plus parameter averaging (all parameters, or the predictor's)."""

    personal = False
