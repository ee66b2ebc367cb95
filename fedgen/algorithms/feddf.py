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

Early stopping (as Lin et al. 2020): `val_size` labelled held-out training
samples, disjoint from the proxy, are checked at step 0 (the plain average),
every `val_every` steps and at the last step, measured as the run evaluates (per
user with its local state on the samples of its labels under the per-user
protocol with local state); a check that beats the best so far by more than
`min_delta` accuracy points is kept, distillation stops after `patience` checks
without such a gain, and only the kept copy is written into the global model. In
the FedGen paper's setting the teacher ensemble is weaker than the averaged model,
so unchecked distillation lowers accuracy every round (docs/fidelity.md, FedDF).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.func import functional_call
from torch.nn import functional as F  # noqa: N812

from fedgen.aggregate import aggregation_weights, weighted_average
from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.context import ClientUpload, RunContext
from fedgen.algorithms.params import FedDFParams
from fedgen.algorithms.shared import Tensors
from fedgen.data.datasets import load_dataset
from fedgen.data_spec import DataSpec


class FedDF(Algorithm[FedDFParams]):
    """FedAvg plus ensemble distillation of the averaged model on a proxy set."""

    def __init__(self, ctx: RunContext, params: FedDFParams) -> None:
        super().__init__(ctx, params)
        self.p = params
        self.proxy_x = self._load_proxy()
        self.rng = torch.Generator(device=ctx.device)
        self.rng.manual_seed(ctx.seed * 1_000_003 + 23)

    def _load_proxy(self) -> torch.Tensor:
        """The proxy inputs; also sets the labelled validation split `val_x`, `val_y`."""
        rng = np.random.default_rng([self.ctx.seed, 29])
        pool = self.data.held_out_idx
        if self.p.proxy == "heldout":
            if pool.numel() == 0:
                raise ValueError(
                    "feddf proxy='heldout' needs training samples no user holds; none left"
                )
            order = torch.from_numpy(rng.permutation(pool.numel())).to(pool.device)
            proxy = self.data.train_x.index_select(0, pool[order[: self.p.proxy_size]])
            # Validation: the next held-out samples of the same draw, never in the proxy.
            val = pool[order[self.p.proxy_size : self.p.proxy_size + self.p.val_size]]
        else:
            ds = load_dataset(DataSpec(name=self.p.proxy, root=self.spec.data.root))
            if tuple(ds.train_x.shape[1:]) != self.data.input_shape:
                raise ValueError(
                    f"feddf proxy {self.p.proxy!r} has inputs {tuple(ds.train_x.shape[1:])}, "
                    f"the task has {self.data.input_shape}"
                )
            pick = rng.permutation(ds.train_x.shape[0])[: self.p.proxy_size]
            proxy = ds.train_x[torch.from_numpy(pick)].to(self.ctx.device)
            vrng = np.random.default_rng([self.ctx.seed, 31])
            order = torch.from_numpy(vrng.permutation(pool.numel())).to(pool.device)
            val = pool[order[: self.p.val_size]]
        if self.p.val_size > 0 and val.numel() == 0:
            raise ValueError(
                "feddf val_size > 0 needs labelled held-out training samples (no user's, not "
                "in the proxy); none left: set algorithm.val_size 0 or a smaller proxy_size"
            )
        self.val_x = self.data.train_x.index_select(0, val)
        self.val_y = self.data.train_y.index_select(0, val)
        return proxy

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

    @torch.no_grad()
    def _val_acc(self, shared: Tensors) -> float:
        """Validation accuracy of the global model with `shared` parameters, measured as the
        run evaluates it: per user with its local state on the validation samples of its
        labels, pooled (per-user protocol with local state), else one model on the whole
        split (with the users' averaged BN statistics when those are kept local)."""
        fed = self.fed
        fed.work.eval()
        base = {**fed.global_model.state_dict(), **shared}
        if not fed.local_keys or self.fid.test_protocol == "global":
            out = self._val_logits({**base, **self._eval_buffers()}, self.val_x)
            return float((out.argmax(1) == self.val_y).float().mean())
        correct, count = 0.0, 0
        for u in self.data.users:
            mask = u.label_counts.index_select(0, self.val_y) > 0
            if not bool(mask.any()):
                continue
            out = self._val_logits({**base, **fed.user_local.peek(u.index)}, self.val_x[mask])
            correct += float((out.argmax(1) == self.val_y[mask]).sum())
            count += int(mask.sum())
        return correct / max(count, 1)

    def _val_logits(self, state: Tensors, x: torch.Tensor) -> torch.Tensor:
        step = self.spec.eval_batch_size
        outs = [
            functional_call(self.fed.work, state, (x[i : i + step],))
            for i in range(0, x.shape[0], step)
        ]
        return torch.cat(outs) if outs else x.new_zeros((0, self.data.num_classes))

    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:  # noqa: ARG002
        teachers = [self._teacher_state(u) for u in uploads]
        self.fed.aggregate(uploads)
        steps = self.p.distill_steps
        if steps == 0:
            return {}
        target, feats = self._ensemble_target(teachers)
        n, bs = self.proxy_x.shape[0], min(self.p.distill_batch_size, self.proxy_x.shape[0])
        batches = torch.randint(0, n, (steps, bs), generator=self.rng, device=self.proxy_x.device)
        opt = self._start_student(predictor_only=feats is not None)
        chosen, metrics = self._distill(opt, target, feats, batches)
        with torch.no_grad():
            state = self.fed.global_model.state_dict()
            for k in self.fed.shared_keys:
                state[k].copy_(chosen[k])
        return metrics

    def _ensemble_target(self, teachers: list[Tensors]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The teachers' mean softened probabilities over the proxy set (N, C), and under
        `share: predictor` each teacher's own proxy features (K, N, D), else None."""
        logits = torch.stack([self._logits(s) for s in teachers])  # (K, N, C)
        target = torch.softmax(logits.mean(0) / self.p.temperature, dim=1)
        feats = (
            torch.stack([self._features(s) for s in teachers])
            if self.spec.share == "predictor"
            else None
        )
        return target, feats

    def _start_student(self, *, predictor_only: bool) -> torch.optim.Optimizer:
        """Load the averaged model (with the evaluation buffers) into the student; a fresh Adam
        over what is distilled (the predictor only, or every parameter)."""
        student = self.fed.work
        with torch.no_grad():
            student.load_state_dict({**self.fed.global_model.state_dict(), **self._eval_buffers()})
        params = (
            list(student.predictor.parameters()) if predictor_only else list(student.parameters())
        )
        return torch.optim.Adam(params, lr=self.p.distill_lr, fused=True)

    def _shared_now(self) -> Tensors:
        """A copy of the student's shared parameters as they are now."""
        state = self.fed.work.state_dict()
        return {k: state[k].detach().clone() for k in self.fed.shared_keys}

    def _distill(
        self,
        opt: torch.optim.Optimizer,
        target: torch.Tensor,
        feats: torch.Tensor | None,
        batches: torch.Tensor,
    ) -> tuple[Tensors, dict[str, float]]:
        """One step per row of `batches`, with early stopping on the validation split: the
        shared parameters to keep (the best validated check, else the last step's) and the
        round's metrics."""
        steps = self.p.distill_steps
        validate = self.p.val_size > 0
        margin = self.p.min_delta / 100.0  # points -> fraction, as _val_acc returns
        best = self._shared_now() if validate else {}
        best_acc = start_acc = self._val_acc(best) if validate else float("nan")
        best_step, since_best, done = 0, 0, 0
        losses = []
        for s in range(steps):
            losses.append(self._distill_step(opt, target, feats, batches[s]))
            done = s + 1
            if validate and (done % self.p.val_every == 0 or done == steps):
                acc = self._val_acc(self._shared_now())
                if acc > best_acc + margin:
                    best, best_acc, best_step, since_best = self._shared_now(), acc, done, 0
                else:
                    since_best += 1
                    if 0 < self.p.patience <= since_best:
                        break
        chosen = best if validate else self._shared_now()
        metrics = {
            "distill_loss": float(torch.stack(losses).mean()),
            "distill_steps_run": float(done),
        }
        if validate:
            metrics.update(
                {
                    "distill_best_step": float(best_step),
                    "val_acc_start": start_acc,
                    "val_acc_best": best_acc,
                }
            )
        return chosen, metrics

    def _distill_step(
        self,
        opt: torch.optim.Optimizer,
        target: torch.Tensor,
        feats: torch.Tensor | None,
        idx: torch.Tensor,
    ) -> torch.Tensor:
        """One Adam step of the student towards the ensemble on the proxy samples `idx`; the loss."""
        student, temp = self.fed.work, self.p.temperature
        # 'eval': BN uses the statistics the global model is evaluated with; 'train': the
        # proxy batch's own (as the users train), running statistics left as they were.
        student.train(self.p.distill_bn == "train")
        if feats is not None:
            out = student.classify(feats.index_select(1, idx).flatten(0, 1))
            tgt = target.index_select(0, idx).repeat(feats.shape[0], 1)
        else:
            out, tgt = student(self.proxy_x.index_select(0, idx)), target.index_select(0, idx)
        loss = F.kl_div(torch.log_softmax(out / temp, 1), tgt, reduction="batchmean") * temp**2
        opt.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        return loss.detach()

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["feddf_rng"] = self.rng.get_state()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.rng.set_state(state["feddf_rng"].cpu())
