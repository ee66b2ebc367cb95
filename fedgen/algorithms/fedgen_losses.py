"""Pure functions of FedGen's objectives (no module state), one per fidelity knob.

Paper: Zhu, Hong, Zhou 2021, arxiv.org/abs/2105.10056 (Eq. 4, Eq. 5).
Official-code behaviour from ../shared/reference/fedgen-method.md §4, §5.2, §6.
Shapes: K teachers (users' predictors), B samples, C classes, d latent size.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F  # noqa: N812


def client_weight(w0: float, decay: float, floor: float, t: int) -> float:
    """alpha_t / beta_t = max(floor, w0 * decay^t), t the 0-based round (reference §5.2)."""
    return max(floor, w0 * decay**t)


def label_weights(counts: torch.Tensor) -> torch.Tensor:
    """w[k, y] = c_k(y) / sum_k' c_k'(y): each user's share of a label. counts (K, C) -> (K, C)."""
    return counts / counts.sum(0, keepdim=True).clamp(min=1e-12)


def present_labels(counts: torch.Tensor, smoothing: float) -> torch.Tensor:
    """Labels some user actually saw: max_k (c_k(y) - smoothing) > 0. counts (K, C) -> sorted (L,)."""
    return torch.nonzero((counts - smoothing).amax(0) > 0).flatten()


def sample_labels(
    n: int,
    mode: str,
    rng: torch.Generator,
    *,
    support: torch.Tensor | None = None,
    prior: torch.Tensor | None = None,
) -> torch.Tensor:
    """n labels: 'prior' draws from `prior` (C,) (unnormalised); otherwise uniform over `support`."""
    if mode == "prior":
        assert prior is not None
        return torch.multinomial(prior.float(), n, replacement=True, generator=rng)
    assert support is not None
    pick = torch.randint(0, support.shape[0], (n,), generator=rng, device=support.device)
    return support.index_select(0, pick)


def ensemble_logits(z: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """All K predictors at once: z (B, d), weight (K, C, d), bias (K, C) -> logits (K, B, C)."""
    k = weight.shape[0]
    return torch.baddbmm(
        bias.unsqueeze(1), z.unsqueeze(0).expand(k, -1, -1), weight.transpose(1, 2)
    )


def teacher_mean_logits(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Eq. 4: CE of the uniformly averaged logits. logits (K, B, C), labels (B,) -> 0-d."""
    return F.cross_entropy(logits.mean(0), labels)


def per_user_nll(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """NLL of every user's predictor on every sample: (K, B, C), (B,) -> (K, B)."""
    logp = torch.log_softmax(logits, dim=-1)
    idx = labels.view(1, -1, 1).expand(logits.shape[0], -1, 1)
    return -logp.gather(-1, idx).squeeze(-1)


def teacher_label_weighted(
    logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor, quirk: bool
) -> torch.Tensor:
    """Official teacher loss: sum_k of user k's NLL weighted by its share w[k, y_i] of each label.

    quirk=True reproduces the official (B,) x (B,1) broadcasting: sum_k mean_i(w_k,y_i) *
    mean_j(NLL_kj). quirk=False is the intended per-sample form sum_k mean_i(w_k,y_i * NLL_ki).
    logits (K, B, C), labels (B,), weights (K, C) -> 0-d.
    """
    nll = per_user_nll(logits, labels)
    w = weights.index_select(1, labels)  # (K, B)
    if quirk:
        return (w.mean(1) * nll.mean(1)).sum()
    return (w * nll).mean(1).sum()


def weighted_ensemble_logits(
    logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor
) -> torch.Tensor:
    """sum_k w[k, y_i] * logits_k,i (the official 'teacher_logit'): (K, B, C) -> (B, C)."""
    return (weights.index_select(1, labels).unsqueeze(-1) * logits).sum(0)


def diversity_exp(noise: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Official DiversityLoss: exp(-mean_ij[mean_d (eps_i-eps_j)^2 * mean_d |z_i-z_j|]), all B^2 pairs."""
    d_eps = torch.cdist(noise, noise, p=2.0).pow(2) / noise.shape[1]
    d_z = torch.cdist(z, z, p=1.0) / z.shape[1]
    return torch.exp(-(d_eps * d_z).mean())


def diversity_msgan(noise: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Mode-seeking loss (Mao et al. 2019): halves of the batch, 1 / (mean|dz| / mean|deps| + 1e-5)."""
    h = z.shape[0] // 2
    ratio = (z[:h] - z[h : 2 * h]).abs().mean() / (noise[:h] - noise[h : 2 * h]).abs().mean()
    return 1.0 / (ratio + 1e-5)


def diversity(kind: str, noise: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """Dispatch on the `diversity_loss` knob ('exp' or 'msgan')."""
    if kind == "exp":
        return diversity_exp(noise, z)
    if kind == "msgan":
        return diversity_msgan(noise, z)
    raise ValueError(f"unknown diversity loss {kind!r}")
