"""FedGen's client objective on the predictor as one autograd node (reference §5.2).

Per regularised local step the predictor h(z) = W z + b sees three row blocks in
one matmul, each with a row of (negated) weights w over the classes:

* B real latents f(x):            w = -onehot(y)/B - beta * q/B
* B latents G(y_real) (KL rows):  w = +beta * q/B, q = softmax(h(G(y_real)))
* n_teach generated latents:      w = -alpha * onehot(y_teach)/n_teach

loss = sum(w * log_softmax(h)) = CE(x, y) + alpha * CE_teach + beta * KL(q || p(.|x)),
the KL rows contributing its entropy term beta/B * sum(q log q), so the reported
loss is the exact objective.

The gradient is written by hand: d loss / d logits = w + coef * softmax(h), with
coef = -(row sum of w): (1+beta)/B real, alpha/n_teach teacher, and -beta/B on the
KL rows, where softmax(h) is q itself, so those rows get (up to rounding) no gradient,
as the official code's detached target. One node replaces about twenty small autograd
nodes per step (slices, exps, products, sums, a cat); at these sizes a step's cost is
op count, not arithmetic (bench/table3.py).
"""

from __future__ import annotations

import functools
from typing import Any

import torch


class PredictorObjective(torch.autograd.Function):
    """loss(features, W, b); see the module docstring for what it computes."""

    @staticmethod
    def forward(
        ctx: Any,
        features: torch.Tensor,  # (B, d), requires grad
        weight: torch.Tensor,  # (C, d)
        bias: torch.Tensor,  # (C,)
        latents: torch.Tensor,  # (n_kl + n_teach, d): KL rows (n_kl = B or 0), then teacher rows
        neg_weights: torch.Tensor,  # (B + n_kl + n_teach, C): w without the q terms
        coef: torch.Tensor,  # (B + n_kl + n_teach, 1)
        kl_sign: torch.Tensor | None,  # (2, 1, 1) = (-beta/B, +beta/B), None: no KL rows
    ) -> torch.Tensor:
        b, c = features.shape[0], neg_weights.shape[1]
        rows = torch.cat([features, latents])
        logp = torch.log_softmax(torch.addmm(bias, rows, weight.t()), 1)
        p = logp.exp()
        if kl_sign is not None:
            neg_weights = neg_weights.clone()
            # Real and KL rows are adjacent, so both q terms are one broadcast update.
            neg_weights[: 2 * b].view(2, b, c).addcmul_(kl_sign, p[b : 2 * b])
        ctx.save_for_backward(rows, p, neg_weights, coef, weight)
        ctx.batch = b
        return torch.dot(neg_weights.view(-1), logp.view(-1))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        rows, p, neg_weights, coef, weight = ctx.saved_tensors
        g = torch.addcmul(neg_weights, p, coef).mul_(grad)  # d loss / d logits
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        return (
            g[: ctx.batch] @ weight if need_x else None,
            g.t() @ rows if need_w else None,
            g.sum(0) if need_b else None,
            None,
            None,
            None,
            None,
        )


@functools.lru_cache(maxsize=64)
def row_scales(
    b: int, n_teach: int, alpha: float, beta: float, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Constants of one user-round's objective (cached: every user of a round shares them).

    For the row blocks [real (B) ; KL (B if beta else 0) ; teacher (n_teach)]:
    the onehot scale that makes the label part of `neg_weights` (-1/B real, 0 KL,
    -alpha/n_teach teacher), coef = -(row sum of w) once q is added, and kl_sign.
    Read-only tensors.
    """
    n_kl = b if beta > 0.0 else 0
    a_t = alpha / n_teach if n_teach else 0.0
    scale = [-1.0 / b] * b + [0.0] * n_kl + [-a_t] * n_teach
    coef = [(1.0 + beta) / b] * b + [-beta / b] * n_kl + [a_t] * n_teach
    kl_sign = torch.tensor([-beta / b, beta / b], device=device).view(2, 1, 1) if n_kl else None
    return (
        torch.tensor(scale, device=device).view(-1, 1),
        torch.tensor(coef, device=device).view(-1, 1),
        kl_sign,
    )


class BatchedPredictorObjective(torch.autograd.Function):
    """`PredictorObjective` of K clients at once (`execution: batched`): every input gains a
    leading client axis (K, ...) but `coef` and `kl_sign`, which a round's clients share;
    the output is each client's loss, (K,)."""

    @staticmethod
    def forward(
        ctx: Any,
        features: torch.Tensor,  # (K, B, d)
        weight: torch.Tensor,  # (K, C, d)
        bias: torch.Tensor,  # (K, C)
        latents: torch.Tensor,  # (K, n_kl + n_teach, d)
        neg_weights: torch.Tensor,  # (K, B + n_kl + n_teach, C)
        coef: torch.Tensor,  # (B + n_kl + n_teach, 1)
        kl_sign: torch.Tensor | None,  # (2, 1, 1)
    ) -> torch.Tensor:
        k, b, c = features.shape[0], features.shape[1], neg_weights.shape[2]
        rows = torch.cat([features, latents], 1)
        logp = torch.log_softmax(torch.baddbmm(bias.unsqueeze(1), rows, weight.transpose(1, 2)), 2)
        p = logp.exp()
        if kl_sign is not None:
            neg_weights = neg_weights.clone()
            neg_weights[:, : 2 * b].view(k, 2, b, c).addcmul_(kl_sign, p[:, b : 2 * b].unsqueeze(1))
        ctx.save_for_backward(rows, p, neg_weights, coef, weight)
        ctx.batch = b
        return (neg_weights * logp).sum((1, 2))

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        rows, p, neg_weights, coef, weight = ctx.saved_tensors
        g = torch.addcmul(neg_weights, p, coef).mul_(grad.view(-1, 1, 1))
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        return (
            torch.bmm(g[:, : ctx.batch], weight) if need_x else None,
            torch.bmm(g.transpose(1, 2), rows) if need_w else None,
            g.sum(1) if need_b else None,
            None,
            None,
            None,
            None,
        )
