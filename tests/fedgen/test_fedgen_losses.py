"""FedGen's fidelity knobs as pure functions: weights, label sampling, teacher and diversity losses."""

from __future__ import annotations

import math

import pytest
import torch

from fedgen.algorithms import fedgen_losses as L  # noqa: N812


def test_client_weight_decay_and_floor() -> None:
    """alpha_t = max(1e-4, 10 * 0.98^t): 9.8 at t=1, 0.18 at t=199 (reference §6 #8)."""
    assert L.client_weight(10.0, 0.98, 1e-4, 1) == pytest.approx(9.8)
    assert L.client_weight(10.0, 0.98, 1e-4, 199) == pytest.approx(0.1792, abs=1e-3)
    assert L.client_weight(10.0, 0.98, 1e-4, 5000) == 1e-4
    assert L.client_weight(1.0, 1.0, 0.0, 123) == 1.0


def test_label_weights_are_per_label_user_shares() -> None:
    counts = torch.tensor([[3.0, 1.0, 1.0], [1.0, 1.0, 4.0]])
    w = L.label_weights(counts)
    torch.testing.assert_close(w.sum(0), torch.ones(3))
    torch.testing.assert_close(w[:, 0], torch.tensor([0.75, 0.25]))
    torch.testing.assert_close(w[:, 1], torch.tensor([0.5, 0.5]))


def test_present_labels_respects_smoothing() -> None:
    counts = torch.tensor([[3.0, 1.0, 1.0], [1.0, 1.0, 4.0]])
    assert L.present_labels(counts, 1.0).tolist() == [0, 2]
    assert L.present_labels(counts - 1.0, 0.0).tolist() == [0, 2]


def test_label_sampling_modes() -> None:
    rng = torch.Generator().manual_seed(0)
    support = torch.tensor([1, 4, 7])
    y = L.sample_labels(6000, "uniform_available", rng, support=support)
    assert set(y.tolist()) == {1, 4, 7}
    assert abs(float((y == 4).float().mean()) - 1 / 3) < 0.03
    prior = torch.tensor([0.0, 3.0, 1.0, 0.0])
    y = L.sample_labels(8000, "prior", rng, prior=prior)
    assert set(y.tolist()) == {1, 2}
    assert abs(float((y == 1).float().mean()) - 0.75) < 0.03


def test_ensemble_logits_equals_per_user_predictors() -> None:
    k, c, d, b = 4, 5, 6, 3
    weight, bias, z = torch.randn(k, c, d), torch.randn(k, c), torch.randn(b, d)
    out = L.ensemble_logits(z, weight, bias)
    assert out.shape == (k, b, c)
    for i in range(k):
        torch.testing.assert_close(out[i], torch.nn.functional.linear(z, weight[i], bias[i]))


def test_teacher_mean_logits_is_ce_of_average() -> None:
    logits, y = torch.randn(3, 8, 5), torch.randint(0, 5, (8,))
    expected = torch.nn.functional.cross_entropy(logits.mean(0), y)
    torch.testing.assert_close(L.teacher_mean_logits(logits, y), expected)
    assert L.teacher_mean_logits(logits, y).shape == ()


def _manual_weighted(
    logits: torch.Tensor, y: torch.Tensor, w: torch.Tensor, quirk: bool
) -> torch.Tensor:
    total = torch.zeros(())
    for k in range(logits.shape[0]):
        nll = torch.nn.functional.cross_entropy(logits[k], y, reduction="none")  # (B,)
        wk = w[k, y]
        if quirk:  # the official (B,) * (B, 1) product: a B x B matrix, then the mean
            total = total + (nll * wk.unsqueeze(1)).mean()
        else:
            total = total + (wk * nll).mean()
    return total


@pytest.mark.parametrize("quirk", [True, False])
def test_teacher_label_weighted_matches_definition(quirk: bool) -> None:
    torch.manual_seed(0)
    logits, y = torch.randn(3, 8, 5), torch.randint(0, 5, (8,))
    w = L.label_weights(torch.rand(3, 5) + 1.0)
    out = L.teacher_label_weighted(logits, y, w, quirk)
    assert out.shape == ()
    torch.testing.assert_close(out, _manual_weighted(logits, y, w, quirk))


def test_per_sample_weighting_is_per_sample_only_without_the_quirk() -> None:
    """Moving weight onto the sample with the large NLL changes the loss only when quirk is off."""
    y = torch.tensor([0, 1])
    logits = torch.zeros(1, 2, 2)
    logits[0, 0] = torch.tensor([5.0, -5.0])  # sample 0: tiny NLL
    logits[0, 1] = torch.tensor([5.0, -5.0])  # sample 1: large NLL
    w_a = torch.tensor([[0.9, 0.1]])  # weight on label 0 (the easy sample)
    w_b = torch.tensor([[0.1, 0.9]])  # same batch-mean weight, on the hard sample
    per_a = L.teacher_label_weighted(logits, y, w_a, quirk=False)
    per_b = L.teacher_label_weighted(logits, y, w_b, quirk=False)
    assert float(per_b) > 5 * float(per_a)  # truly per sample
    nll = L.per_user_nll(logits, y)
    torch.testing.assert_close(per_b, (w_b[0, y] * nll[0]).mean())
    q_a = L.teacher_label_weighted(logits, y, w_a, quirk=True)
    q_b = L.teacher_label_weighted(logits, y, w_b, quirk=True)
    torch.testing.assert_close(q_a, q_b)  # collapses to mean(w) * mean(NLL)
    torch.testing.assert_close(q_a, torch.tensor(0.5) * nll.mean())


def test_weighted_ensemble_logits_shape() -> None:
    logits, y = torch.randn(3, 8, 5), torch.randint(0, 5, (8,))
    w = L.label_weights(torch.ones(3, 5))
    torch.testing.assert_close(L.weighted_ensemble_logits(logits, y, w), logits.mean(0))


def test_diversity_exp_definition() -> None:
    torch.manual_seed(0)
    eps, z = torch.rand(6, 4), torch.randn(6, 3)
    d_eps = ((eps[:, None, :] - eps[None, :, :]) ** 2).mean(-1)
    d_z = (z[:, None, :] - z[None, :, :]).abs().mean(-1)
    expected = torch.exp(-(d_eps * d_z).mean())
    torch.testing.assert_close(L.diversity_exp(eps, z), expected)
    assert 0.0 < float(L.diversity("exp", eps, z)) <= 1.0


def test_diversity_msgan_and_gradients() -> None:
    eps = torch.rand(8, 4)
    z = torch.randn(8, 3, requires_grad=True)
    loss = L.diversity("msgan", eps, z)
    ratio = (z[:4] - z[4:]).abs().mean() / (eps[:4] - eps[4:]).abs().mean()
    torch.testing.assert_close(loss, 1.0 / (ratio + 1e-5))
    loss.backward()  # type: ignore[no-untyped-call]
    assert z.grad is not None
    assert math.isfinite(float(z.grad.abs().sum()))
    with pytest.raises(ValueError, match="unknown diversity"):
        L.diversity("none", eps, z)
