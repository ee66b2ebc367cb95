"""FedGen end to end on the tiny synthetic task: learning, metrics, generator checkpoints, resume."""

from __future__ import annotations

import io
import math
from typing import Any

import pytest
import torch

from fedgen.algorithms.fedgen import FedGen
from fedgen.events import MemorySink
from fedgen.models.generator import load_generator_checkpoint, sample_latents
from fedgen.runner import Simulation, run
from tests.support.specs import tiny_spec

pytestmark = pytest.mark.slow  # FedGen runs: real training

KEYS = (
    "test_acc",
    "test_loss",
    "train_loss",
    "gen_teacher_loss",
    "gen_diversity_loss",
    "gen_ensemble_acc",
)


def _spec(**kw: Any) -> Any:
    # The official client weights (alpha_0 = beta_0 = 10) need a small client lr to stay stable.
    return tiny_spec(
        **{"algorithm": {"name": "fedgen", "gen_batch_size": 16}, "rounds": 6, "lr": 0.02, **kw}
    )


@pytest.mark.parametrize("profile", ["official", "paper"])
def test_fedgen_learns_with_finite_losses(profile: str) -> None:
    sink = MemorySink()
    run(_spec(fidelity={"profile": profile}), sink)
    last = sink.events[-1].metrics
    assert last["test_acc"] > 0.6  # chance is 0.2
    for e in sink.events[1:]:
        for k in ("train_loss", "gen_teacher_loss", "gen_diversity_loss", "gen_train_ms"):
            assert math.isfinite(e.metrics[k]), (e.round, k)
        assert 0.0 <= e.metrics["gen_ensemble_acc"] <= 1.0


def test_generator_checkpoints_every_checkpoint_round() -> None:
    sink = MemorySink()
    run(_spec(checkpoint_every=2), sink)
    gens = {e.round: c for e in sink.events for c in e.checkpoints if c.kind == "generator"}
    assert sorted(gens) == [2, 4, 6]
    gen = load_generator_checkpoint(gens[6].data)
    z, y = sample_latents(gen, 4, seed=0)
    assert z.shape == (20, 32)
    assert y.shape == (20,)
    raw = torch.load(io.BytesIO(gens[2].data), weights_only=True)
    assert raw["round"] == 2
    assert set(raw) >= {"noise_dim", "hidden_dim", "latent_dim", "state_dict"}


def test_generator_trains_and_official_ensemble_beats_chance() -> None:
    sink = MemorySink()
    run(_spec(), sink)
    accs = [e.metrics["gen_ensemble_acc"] for e in sink.events[1:]]
    assert accs[-1] > 0.5
    losses = [e.metrics["gen_teacher_loss"] for e in sink.events[1:]]
    assert losses[-1] < losses[0]


def test_clients_do_not_touch_the_generator() -> None:
    """A client update leaves generator parameters, grads and BN statistics unchanged."""
    sim = Simulation(_spec())
    algo = sim.algo
    assert isinstance(algo, FedGen)
    before = {k: v.clone() for k, v in algo.generator.state_dict().items()}
    algo.client_update(sim.data.users[0], 2, 0.05)  # round 2: regularised
    for k, v in algo.generator.state_dict().items():
        torch.testing.assert_close(v, before[k])
    assert all(p.grad is None for p in algo.generator.parameters())


def test_round0_and_regularization_steps_knobs() -> None:
    sim = Simulation(_spec(fidelity={"regularization_steps": 2}))
    algo = sim.algo
    assert isinstance(algo, FedGen)
    batches = algo.fed.batches(sim.data.users[0])
    assert algo.plan(batches, 1) is None  # official: no generator terms in round 0
    plan = algo.plan(batches, 3)
    assert plan is not None
    assert plan.steps == 2
    assert plan.alpha == pytest.approx(10 * 0.98**2)
    assert plan.beta == pytest.approx(10 * 0.98**2)
    assert plan.n_teach == 16
    real = min(16, sim.data.users[0].num_train)
    assert plan.y_teach.shape == (2, 16)
    assert plan.z.shape == (2, real + 16, 32)  # KL latents G(y_real), then teacher latents
    assert plan.neg_weights.shape == (2, real + real + 16, 5)
    # Label weights per row: -1/B real, none on the KL rows (q is added per step), -alpha/n_teach.
    sums = torch.tensor([-1.0 / real] * real + [0.0] * real + [-plan.alpha / 16] * 16)
    torch.testing.assert_close(plan.neg_weights.sum(2), sums.expand(2, -1))
    beta_b = plan.beta / real
    coef = torch.tensor([1.0 / real + beta_b] * real + [-beta_b] * real + [plan.alpha / 16] * 16)
    torch.testing.assert_close(plan.coef.view(-1), coef)
    paper = Simulation(_spec(fidelity={"profile": "paper"})).algo
    assert isinstance(paper, FedGen)
    p_plan = paper.plan(paper.fed.batches(sim.data.users[0]), 1)  # paper: from round 0
    assert p_plan is not None
    assert p_plan.beta == 0.0  # no KL term
    assert p_plan.z.shape[1] == p_plan.n_teach == 16


def test_label_counts_per_fidelity() -> None:
    sim = Simulation(_spec())
    user = sim.data.users[1]
    up = sim.algo.client_update(user, 1, 0.05)
    assert up.label_counts is not None
    assert (
        float(up.label_counts.sum()) == min(16, user.num_train) * 5 + 5
    )  # T x B sampled labels + 1 per class
    paper = Simulation(_spec(fidelity={"profile": "paper"}))
    user = paper.data.users[1]  # the paper profile draws its own split (partition.draws)
    up = paper.algo.client_update(user, 1, 0.05)
    assert up.label_counts is not None
    torch.testing.assert_close(up.label_counts, user.label_counts)


@pytest.mark.parametrize("profile", ["official", "paper"])
def test_resume_equals_uninterrupted(profile: str) -> None:
    spec = _spec(fidelity={"profile": profile}, checkpoint_every=3)
    full = MemorySink()
    run(spec, full)
    ckpt = next(c for e in full.events if e.round == 3 for c in e.checkpoints if c.kind == "full")
    resumed = MemorySink()
    run(spec, resumed, resume_from=ckpt.data)
    assert [e.round for e in resumed.events] == [4, 5, 6]
    for a, b in zip(full.events[4:], resumed.events, strict=True):
        assert [a.metrics[k] for k in KEYS] == [b.metrics[k] for k in KEYS]


def test_full_participation() -> None:
    sink = MemorySink()
    run(_spec(users_per_round=5, rounds=2), sink)
    assert sum(u.selected for u in sink.events[-1].users) == 5


@pytest.mark.parametrize("fidelity", [{}, {"client_kl": False}, {"client_teacher_weight": 0.0}])
def test_fused_client_objective_equals_its_definition(fidelity: dict[str, Any]) -> None:
    """CE + alpha*CE(h(z_teach), y_teach) + beta*KL(softmax(h(G(y))) || p(.|x)): value and grads."""
    sim = Simulation(_spec(fidelity=fidelity))
    algo = sim.algo
    assert isinstance(algo, FedGen)
    user = sim.data.users[0]
    batches = algo.fed.batches(user)
    plan = algo.plan(batches, 3)
    assert plan is not None
    fn = algo.plan_loss(plan)
    model = algo.fed.load_user_model(user)
    model.train()
    params = list(model.parameters())
    for step in range(2):
        idx = batches[step]
        x, y = sim.data.train_x[idx], sim.data.train_y[idx]
        fused = fn(model, x, y, step)
        nt = plan.n_teach
        logits = model(x)
        ref = torch.nn.functional.cross_entropy(logits, y)
        n_kl = plan.z.shape[1] - nt
        if nt:
            y_teach = plan.y_teach[step]
            ref = ref + plan.alpha * torch.nn.functional.cross_entropy(
                model.classify(plan.z[step][n_kl:]), y_teach
            )
        if plan.beta > 0.0:
            with torch.no_grad():
                target = torch.softmax(model.classify(plan.z[step][:n_kl]), 1)
            logp = torch.log_softmax(logits, 1)
            ref = ref + plan.beta * torch.nn.functional.kl_div(logp, target, reduction="batchmean")
        torch.testing.assert_close(fused, ref, rtol=1e-5, atol=1e-5)
        for g1, g2 in zip(
            torch.autograd.grad(fused, params), torch.autograd.grad(ref, params), strict=True
        ):
            torch.testing.assert_close(g1, g2, rtol=1e-4, atol=1e-5)


def test_plan_rows_carry_their_labels() -> None:
    """KL latents are G(y_real) for the step's real batch, teacher latents G(y_teach), in row order."""
    sim = Simulation(_spec())
    algo = sim.algo
    assert isinstance(algo, FedGen)
    folded = algo.client_generator()
    folded.noise_weight.zero_()  # z now depends on the label alone
    batches = algo.fed.batches(sim.data.users[0])
    plan = algo.plan(batches, 3)
    assert plan is not None
    steps, b = plan.steps, batches.shape[1]
    y_real = sim.data.train_y[batches[:steps]]
    noise = torch.zeros(1, folded.noise_weight.shape[0])

    def g(labels: torch.Tensor) -> torch.Tensor:
        return folded(labels.reshape(-1), noise.expand(labels.numel(), -1)).view(*labels.shape, -1)

    torch.testing.assert_close(plan.z[:, :b], g(y_real))
    torch.testing.assert_close(plan.z[:, b:], g(plan.y_teach))
    # The label part of the weights: real rows onehot(y_real), teacher rows onehot(y_teach).
    torch.testing.assert_close(plan.neg_weights[:, :b].argmin(2), y_real)
    torch.testing.assert_close(plan.neg_weights[:, 2 * b :].argmin(2), plan.y_teach)
