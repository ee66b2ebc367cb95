"""FedDF: FedAvg followed by server-side ensemble distillation on unlabeled proxy data.

Paper: Lin, Kong, Stich, Jaggi 2020, "Ensemble Distillation for Robust Model
Fusion in Federated Learning", arxiv.org/abs/2006.07242 (Alg. 1). FedGen's
Table 1 "FedDFusion"; not in the official FedGen code (reference §5.7).

Each round: average the uploads (the student's starting point), then take
`distill_steps` Adam steps (fresh optimiser, lr `distill_lr`) on batches of the
proxy set, minimising T^2 * KL(softmax(mean_k logits_k / T) || softmax(student / T)),
the teachers being the round's uploaded models. Teacher probabilities are computed
once per round over the whole proxy set. Proxy: `heldout` = training samples no
user holds (`FederatedData.held_out_idx`), or another dataset by name, `proxy_size`
samples drawn with a seed. Under `share: predictor` only the predictor is shared
and distilled: the student predictor is applied to every teacher's own features.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.func import functional_call
from torch.nn import functional as F  # noqa: N812

from fedgen.aggregate import aggregation_weights, weighted_average
from fedgen.algorithms.base import Algorithm, ClientUpload, RunContext
from fedgen.algorithms.shared import Tensors
from fedgen.data.datasets import load_dataset
from fedgen.spec import DataSpec, FedDFParams


class FedDF(Algorithm[FedDFParams]):
    """FedAvg plus ensemble distillation of the averaged model on a proxy set."""

    def __init__(self, ctx: RunContext, params: FedDFParams) -> None:
        super().__init__(ctx, params)
        self.p = params
        self.proxy_x = self._load_proxy()
        self.rng = torch.Generator(device=ctx.device)
        self.rng.manual_seed(ctx.seed * 1_000_003 + 23)

    def _load_proxy(self) -> torch.Tensor:
        rng = np.random.default_rng([self.ctx.seed, 29])
        if self.p.proxy == "heldout":
            pool = self.data.held_out_idx
            if pool.numel() == 0:
                raise ValueError(
                    "feddf proxy='heldout' needs training samples no user holds; none left"
                )
            pick = rng.permutation(pool.numel())[: self.p.proxy_size]
            return self.data.train_x.index_select(0, pool[torch.from_numpy(pick).to(pool.device)])
        ds = load_dataset(DataSpec(name=self.p.proxy, root=self.spec.data.root))
        if tuple(ds.train_x.shape[1:]) != self.data.input_shape:
            raise ValueError(
                f"feddf proxy {self.p.proxy!r} has inputs {tuple(ds.train_x.shape[1:])}, "
                f"the task has {self.data.input_shape}"
            )
        pick = rng.permutation(ds.train_x.shape[0])[: self.p.proxy_size]
        return ds.train_x[torch.from_numpy(pick)].to(self.ctx.device)

    def _teacher_state(self, upload: ClientUpload) -> Tensors:
        return self.fed.trained_tensors(upload)

    def _eval_buffers(self) -> Tensors:
        """The buffers the global model is evaluated with (users' average when kept local)."""
        if self.fed.buffers_shared or not self.fed.buffer_keys:
            return dict(self.fed.global_model.named_buffers())
        weights = aggregation_weights([u.num_train for u in self.data.users], "samples")
        avg = weighted_average(
            [{k: d[k] for k in self.fed.buffer_keys} for d in self.fed.user_local], weights
        )
        return avg

    @torch.no_grad()
    def _logits(self, state: Tensors) -> torch.Tensor:
        """A model's logits over the whole proxy set (eval mode, in chunks)."""
        self.fed.work.eval()
        step = self.spec.eval_batch_size
        outs = [
            functional_call(self.fed.work, state, (self.proxy_x[i : i + step],))
            for i in range(0, self.proxy_x.shape[0], step)
        ]
        return torch.cat(outs)

    @torch.no_grad()
    def _features(self, state: Tensors) -> torch.Tensor:
        self.fed.work.eval()
        self.fed.work.load_state_dict(state)
        feats = [
            self.fed.work.extract(self.proxy_x[i : i + self.spec.eval_batch_size])
            for i in range(0, self.proxy_x.shape[0], self.spec.eval_batch_size)
        ]
        return torch.cat(feats)

    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:  # noqa: ARG002
        teachers = [self._teacher_state(u) for u in uploads]
        self.fed.aggregate(uploads)
        steps, temp = self.p.distill_steps, self.p.temperature
        if steps == 0:
            return {}
        logits = torch.stack([self._logits(s) for s in teachers])  # (K, N, C)
        target = torch.softmax(logits.mean(0) / temp, dim=1)
        feats = (
            torch.stack([self._features(s) for s in teachers])
            if self.spec.share == "predictor"
            else None
        )
        n, bs = self.proxy_x.shape[0], min(self.p.distill_batch_size, self.proxy_x.shape[0])
        batches = torch.randint(0, n, (steps, bs), generator=self.rng, device=self.proxy_x.device)
        student = self.fed.work
        with torch.no_grad():
            student.load_state_dict({**self.fed.global_model.state_dict(), **self._eval_buffers()})
        student.eval()  # BN uses the statistics the global model is evaluated with
        params = (
            list(student.predictor.parameters())
            if feats is not None
            else list(student.parameters())
        )
        opt = torch.optim.Adam(params, lr=self.p.distill_lr, fused=True)
        losses = []
        for s in range(steps):
            idx = batches[s]
            if feats is not None:
                out = student.classify(feats.index_select(1, idx).flatten(0, 1))
                tgt = target.index_select(0, idx).repeat(feats.shape[0], 1)
            else:
                out, tgt = student(self.proxy_x.index_select(0, idx)), target.index_select(0, idx)
            loss = F.kl_div(torch.log_softmax(out / temp, 1), tgt, reduction="batchmean") * temp**2
            opt.zero_grad(set_to_none=True)
            loss.backward()  # type: ignore[no-untyped-call]
            opt.step()
            losses.append(loss.detach())
        with torch.no_grad():
            state = self.fed.global_model.state_dict()
            for k in self.fed.shared_keys:
                state[k].copy_(student.state_dict()[k])
        return {"distill_loss": float(torch.stack(losses).mean())}

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["feddf_rng"] = self.rng.get_state()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.rng.set_state(state["feddf_rng"].cpu())
