"""FedGen: data-free knowledge distillation through a server-side latent generator.

Paper: Zhu, Hong, Zhou 2021, "Data-Free Knowledge Distillation for Heterogeneous
Federated Learning", arxiv.org/abs/2105.10056 (Alg. 1, Eq. 4-5). Behaviour that
differs between the paper and the official code is selected by fidelity knobs
(declared in `fedgen.knobs`, set in the spec's `algorithm` section, resolved in
`self.fid`; reference §5.2, §6; docs/fidelity.md). This module is the whole method;
the global model, per-user state, batch streams, aggregation and evaluation are the
shared `Federation` (`self.fed`, fedgen/algorithms/shared.py).

Client: real-data CE, plus alpha_t * CE of the predictor on generated latents
(labels per `client_label_sampling`), plus (official) beta_t * KL(softmax(h(G(y_real)))
|| p(.|x_real)). All generated latents of a user's round come from one call of
the generator folded for eval mode (`FoldedGenerator`: BN and the label input folded
into the first layer), so clients never backpropagate into the generator; each
local step's predictor terms are one autograd node (`fedgen_head`). Under
`execution: batched` the same plans, drawn in user order, feed one node for all clients.
Server: `generator_steps` steps on the teacher loss over the uploaded predictors,
stacked into (K, C, d) so that all K logits are one batched matmul, plus the
diversity loss; then the usual aggregation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

from fedgen.aggregate import state_nbytes
from fedgen.algorithms import fedgen_head as H  # noqa: N812
from fedgen.algorithms import fedgen_losses as L  # noqa: N812
from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.client_state import PerUserRows
from fedgen.algorithms.context import ClientUpload, RunContext
from fedgen.algorithms.params import FedGenParams
from fedgen.batched import BatchedLoss, StackedClients, cross_entropy_losses
from fedgen.client import LossFn, local_sgd
from fedgen.events import Checkpoint
from fedgen.federated import UserData
from fedgen.models.cnn import SplitModel
from fedgen.models.generator import (
    FoldedGenerator,
    build_generator,
    generator_checkpoint,
    generator_config,
    sample_noise,
)


@dataclass(frozen=True)
class Plan:
    """A user-round's precomputed inputs to the local objective (reference §5.2).

    Per regularised step the predictor sees [f(x) ; z_kl ; z_teach] in one matmul,
    inside one autograd node (`fedgen_head.PredictorObjective` documents the weights).
    """

    steps: int  # generator terms only in local steps < steps
    alpha: float  # teacher-term weight (0: no teacher term)
    beta: float  # latent-KL weight (0: no KL term)
    z: torch.Tensor  # (steps, n_kl + n_teach, d): G(y_real) latents (n_kl = B or 0), then teacher
    neg_weights: torch.Tensor  # (steps, B + n_kl + n_teach, C): label part of w
    coef: torch.Tensor  # (B + n_kl + n_teach, 1)
    kl_sign: torch.Tensor | None  # (2, 1, 1): (-beta/B, beta/B); None without the KL term
    y_teach: torch.Tensor  # (steps, n_teach): the teacher term's sampled labels
    n_teach: int


class FedGen(Algorithm[FedGenParams]):
    """FedAvg plus the generator's client regulariser and server-side generator training."""

    def __init__(self, ctx: RunContext, params: FedGenParams) -> None:
        super().__init__(ctx, params)
        p, fid = params, self.fid
        self.gcfg = generator_config(
            p.preset,
            ctx.spec.data.name,
            self.data.num_classes,
            self.fed.global_model.latent_dim,
            noise_dim=p.noise_dim,
            hidden_dim=p.hidden_dim,
            embedding=p.embedding,
            batchnorm=fid.generator_batchnorm,
            noise=fid.noise,
            model=ctx.spec.model.name,
        )
        self.generator = build_generator(self.gcfg, ctx.seed + 1).to(ctx.device)
        gparams = list(self.generator.parameters())
        opt_cls = torch.optim.Adam if fid.generator_optimizer == "adam" else torch.optim.SGD
        self.gen_opt: torch.optim.Optimizer = opt_cls(
            gparams, lr=fid.generator_lr, weight_decay=fid.generator_weight_decay, fused=True
        )
        self.rng = torch.Generator(device=ctx.device)
        self.rng.manual_seed(ctx.seed * 1_000_003 + 11)
        self.smoothing = 1.0 if fid.label_counts == "sampled_batches" else 0.0
        # Each user's latest reported counts, made on its first report (memory and checkpoints
        # grow with the users ever sampled, not with num_users: client_state.PerUserRows).
        self.user_counts = PerUserRows(len(self.data.users), self.data.num_classes, ctx.device)
        self.available = self.data.available_labels
        self.counts_reported = False  # a Python flag: no device sync to ask whether p_hat exists
        self._folded: FoldedGenerator | None = None  # clients' view of the generator; None = stale
        self.eye = torch.eye(self.data.num_classes, device=ctx.device)  # one-hot rows by gather

    # -- client side ---------------------------------------------------------
    def prior(self) -> torch.Tensor:
        """p_hat(y): the latest counts reported by all users so far (uniform over available labels before)."""
        if self.counts_reported:
            return self.user_counts.total()
        prior = torch.zeros(self.data.num_classes, device=self.ctx.device)
        prior[self.available] = 1.0
        return prior

    def broadcast_nbytes(self, user: UserData) -> int:
        extra = state_nbytes(self.generator.state_dict())
        if "prior" in (self.fid.client_label_sampling, self.fid.server_label_sampling):
            extra += self.data.num_classes * 4
        return super().broadcast_nbytes(user) + extra

    def plan(self, batches: torch.Tensor, server_round: int) -> Plan | None:
        """Precompute every generated latent the user needs this round (one generator call)."""
        fid, t = self.fid, server_round - 1
        if t == 0 and not fid.regularize_round0:
            return None
        steps, b = batches.shape
        n_reg = steps if fid.regularization_steps == 0 else min(fid.regularization_steps, steps)
        ratio = (
            self.params.gen_batch_size / self.spec.batch_size
            if fid.client_teacher_batch_ratio
            else 1.0
        )
        alpha = ratio * L.client_weight(
            fid.client_teacher_weight, fid.client_weight_decay, fid.client_weight_floor, t
        )
        beta = L.client_weight(
            fid.client_kl_weight, fid.client_weight_decay, fid.client_weight_floor, t
        )
        beta = beta if fid.client_kl else 0.0
        if (alpha == 0.0 and beta == 0.0) or n_reg == 0:
            return None
        n_t = self.params.gen_batch_size if alpha > 0.0 else 0
        y_real = self.data.train_y.index_select(0, batches[:n_reg].reshape(-1)).view(n_reg, b)
        y_teach = (
            L.sample_labels(
                n_reg * n_t,
                fid.client_label_sampling,
                self.rng,
                support=self.available,
                prior=self.prior() if fid.client_label_sampling == "prior" else None,
            )
            if n_t
            else y_real.new_zeros(0)
        ).view(n_reg, n_t)
        # Rows per step are [real ; KL ; teacher] (fedgen_head); one generator call makes
        # the KL and teacher latents of all steps.
        gen_labels = torch.cat([y_real, y_teach], 1) if beta > 0.0 else y_teach
        noise = sample_noise(gen_labels.numel(), self.gcfg, self.rng)
        z = self.client_generator()(gen_labels.reshape(-1), noise).view(*gen_labels.shape, -1)
        scale, coef, kl_sign = H.row_scales(b, n_t, alpha, beta, z.device)
        row_labels = torch.cat([y_real, gen_labels], 1)
        onehot = self.eye.index_select(0, row_labels.reshape(-1)).view(*row_labels.shape, -1)
        return Plan(n_reg, alpha, beta, z, onehot * scale, coef, kl_sign, y_teach, n_t)

    def client_generator(self) -> FoldedGenerator:
        """The generator as clients use it this round (eval mode, folded; built once per change)."""
        if self._folded is None:
            self._folded = FoldedGenerator(self.generator)
        return self._folded

    def plan_loss(self, plan: Plan | None) -> LossFn:
        """The local objective over precomputed latents: one predictor node per step (see `Plan`)."""

        def loss_fn(model: nn.Module, x: torch.Tensor, y: torch.Tensor, step: int) -> torch.Tensor:
            assert isinstance(model, SplitModel)
            if plan is None or step >= plan.steps:
                return F.cross_entropy(model(x), y)
            head = model.predictor
            loss: torch.Tensor = H.PredictorObjective.apply(
                model.extract(x),
                head.weight,
                head.bias,
                plan.z[step],
                plan.neg_weights[step],
                plan.coef,
                plan.kl_sign,
            )
            return loss

        return loss_fn

    def client_update(self, user: UserData, server_round: int, lr: float) -> ClientUpload:
        model = self.fed.load_user_model(user)
        batches = self.fed.batches(user)
        plan = self.plan(batches, server_round)
        loss = local_sgd(
            model,
            self.data.train_x,
            self.data.train_y,
            batches,
            lr,
            self.plan_loss(plan),
            augment=self.data.augment,
        )
        return self._with_counts(self.fed.make_upload(user, model, loss), user, batches)

    def _with_counts(
        self, upload: ClientUpload, user: UserData, batches: torch.Tensor
    ) -> ClientUpload:
        """The upload with the label counts the server's generator training reads."""
        if self.fid.label_counts == "sampled_batches":
            y = self.data.train_y.index_select(0, batches.reshape(-1))
            upload.label_counts = torch.bincount(y, minlength=self.data.num_classes).float() + 1.0
        else:
            upload.label_counts = user.label_counts.clone()
        return upload

    # -- client side, batched ------------------------------------------------
    def batch_plans(
        self,
        users: list[UserData],  # noqa: ARG002
        batches: list[torch.Tensor],
        server_round: int,
    ) -> list[Any]:
        # In user order, as `client_update` draws them one user after another.
        return [self.plan(b, server_round) for b in batches]

    def batched_loss(self, plans: list[Any], server_round: int) -> BatchedLoss:  # noqa: ARG002
        first: Plan | None = plans[0]
        if first is None:  # a round's users share alpha, beta and steps: all or none have one
            return cross_entropy_losses
        z = torch.stack([p.z for p in plans])  # (K, steps, n_kl + n_teach, d)
        neg = torch.stack([p.neg_weights for p in plans])  # (K, steps, rows, C)

        def loss_fn(
            stack: StackedClients, x: torch.Tensor, y: torch.Tensor, step: int
        ) -> torch.Tensor:
            if step >= first.steps:
                return cross_entropy_losses(stack, x, y, step)
            loss: torch.Tensor = H.BatchedPredictorObjective.apply(
                stack.extract(x),
                stack.params["predictor.weight"],
                stack.params["predictor.bias"],
                z[:, step],
                neg[:, step],
                first.coef,
                first.kl_sign,
            )
            return loss

        return loss_fn

    def upload_batched(
        self,
        user: UserData,
        state: dict[str, torch.Tensor],
        loss: torch.Tensor,
        batches: torch.Tensor,
    ) -> ClientUpload:
        return self._with_counts(self.fed.upload_from_state(user, state, loss), user, batches)

    # -- server side ---------------------------------------------------------
    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:
        for u in uploads:
            assert u.label_counts is not None
            self.user_counts[u.user] = u.label_counts - self.smoothing
        self.counts_reported = self.counts_reported or bool(uploads)
        metrics = self.train_generator(uploads, server_round)
        self.fed.aggregate(uploads)
        return metrics

    def _server_labels(self, counts: torch.Tensor, n: int) -> torch.Tensor:
        if self.fid.server_label_sampling == "prior":
            return L.sample_labels(n, "prior", self.rng, prior=self.prior())
        support = L.present_labels(counts, self.smoothing)
        if support.numel() == 0:
            support = self.available
        return L.sample_labels(n, "uniform", self.rng, support=support)

    def train_generator(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:
        """`generator_steps` steps of teacher + diversity loss over the uploaded predictors."""
        fid, steps, bs = self.fid, self.fid.generator_steps, self.params.server_batch_size
        if steps == 0:
            return {}
        t0 = time.perf_counter()
        weight = torch.stack([u.params["predictor.weight"] for u in uploads])  # (K, C, d)
        bias = torch.stack([u.params["predictor.bias"] for u in uploads])  # (K, C)
        counts = torch.stack([u.label_counts for u in uploads if u.label_counts is not None])
        shares = L.label_weights(counts)
        labels = self._server_labels(counts, steps * bs).view(steps, bs)
        noise = sample_noise(steps * bs, self.gcfg, self.rng).view(steps, bs, -1)
        for group in self.gen_opt.param_groups:
            group["lr"] = fid.generator_lr * fid.generator_lr_decay ** (server_round - 1)
        use_div = fid.diversity_loss != "none" and fid.diversity_weight > 0.0
        self._folded = None
        self.generator.train()
        t_losses, d_losses, correct = [], [], []
        for s in range(steps):
            y = labels[s]
            z = self.generator(y, noise[s])
            logits = L.ensemble_logits(z, weight, bias)
            if fid.teacher_loss == "mean_logits":
                loss = L.teacher_mean_logits(logits, y)
            else:
                loss = L.teacher_label_weighted(logits, y, shares, fid.teacher_broadcast_quirk)
            t_losses.append(loss.detach())
            if use_div:
                div = L.diversity(fid.diversity_loss, noise[s], z)
                d_losses.append(div.detach())
                loss = loss + fid.diversity_weight * div
            self.gen_opt.zero_grad(set_to_none=True)
            loss.backward()  # type: ignore[no-untyped-call]
            self.gen_opt.step()
            with torch.no_grad():
                ens = (
                    logits.mean(0)
                    if fid.teacher_loss == "mean_logits"
                    else L.weighted_ensemble_logits(logits, y, shares)
                )
                correct.append((ens.argmax(1) == y).float().mean())
        zero = torch.zeros((), device=self.ctx.device)
        stats = torch.stack(
            [
                torch.stack(t_losses).mean(),
                torch.stack(d_losses).mean() if d_losses else zero,
                torch.stack(correct).mean(),
            ]
        ).tolist()
        return {
            "gen_teacher_loss": stats[0],
            "gen_diversity_loss": stats[1],
            "gen_ensemble_acc": stats[2],
            "gen_train_ms": (time.perf_counter() - t0) * 1e3,
        }

    # -- checkpoints ---------------------------------------------------------
    def checkpoints(self, server_round: int) -> list[Checkpoint]:
        return [
            Checkpoint(
                "generator", server_round, generator_checkpoint(self.generator, server_round)
            )
        ]

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["fedgen"] = {
            "generator": {k: v.detach().clone() for k, v in self.generator.state_dict().items()},
            "optimizer": self.gen_opt.state_dict(),
            "rng": self.rng.get_state(),
            "user_counts": self.user_counts.state_dict(),
        }
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        g = state["fedgen"]
        self.generator.load_state_dict(g["generator"])
        self._folded = None
        self.gen_opt.load_state_dict(g["optimizer"])
        self.rng.set_state(g["rng"].cpu())
        self.user_counts.load_state_dict(g["user_counts"])
        self.counts_reported = len(self.user_counts) > 0
