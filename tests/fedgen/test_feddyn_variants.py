"""FedDyn's variants of the authors' released code (issue 39): `evaluate` and `alpha_scaling`.

At their defaults the options leave a spec's identity as it was; `evaluate: average` reports
the metrics of the plain mean of the round's uploads and broadcasts the same θ^t as
`corrected`; `alpha_scaling: inverse_share` gives user k α_k = α · mean_n / n_k in its local
term, its g_k and the server's h; unknown values are refused naming the field. Batched and
sequential runs of the options agree, and resumed runs repeat uninterrupted ones
(tests/fedgen/test_batched.py and test_reviewer_baselines.py run those cases too).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from fedgen.algorithms.context import ClientUpload
from fedgen.algorithms.feddyn import FedDyn, user_alphas
from fedgen.evaluation import Evaluation, evaluate_validation
from fedgen.runner import Simulation
from fedgen.spec import SpecError
from tests.support.specs import tiny_spec

pytestmark = pytest.mark.slow  # FedDyn rounds on the tiny synthetic task: real training

CHOSEN = [4, 0, 2]


def _spec(**algorithm: Any) -> Any:
    return tiny_spec(algorithm={"name": "feddyn", "alpha": 0.1, **algorithm})


def _feddyn(sim: Simulation) -> FedDyn:
    assert isinstance(sim.algo, FedDyn)
    return sim.algo


def _params(sim: Simulation) -> dict[str, torch.Tensor]:
    algo = _feddyn(sim)
    state = algo.fed.global_model.state_dict()
    return {k: state[k].detach().clone() for k in algo.keys}


def _round_with_uploads(sim: Simulation, server_round: int) -> list[ClientUpload]:
    """Train `CHOSEN` sequentially and aggregate; the uploads the server received."""
    uploads, _, _ = sim.train_sequential(CHOSEN, server_round)
    sim.algo.server_update(uploads, server_round)
    return uploads


def _same_evaluation(a: Evaluation, b: Evaluation) -> None:
    assert (a.global_acc, a.global_loss) == (b.global_acc, b.global_loss)
    assert torch.equal(a.user_acc, b.user_acc)
    assert torch.equal(a.user_loss, b.user_loss)


def test_defaults_leave_the_spec_identity_unchanged() -> None:
    """Left out at their defaults: a FedDyn spec's canonical form is what it was."""
    # Prepare
    plain = _spec()
    explicit = _spec(evaluate="corrected", alpha_scaling="uniform")
    # Execute
    dumped = plain.model_dump(mode="json")["algorithm"]
    # Assert
    assert dumped == {"name": "feddyn", "alpha": 0.1}
    assert explicit.canonical_json() == plain.canonical_json()
    assert explicit.result_hash() == plain.result_hash()
    assert _spec(evaluate="average").result_hash() != plain.result_hash()
    assert _spec(alpha_scaling="inverse_share").result_hash() != plain.result_hash()
    assert _spec(evaluate="average").model_dump()["algorithm"]["evaluate"] == "average"


@pytest.mark.parametrize(
    ("field", "allowed"),
    [("evaluate", "'corrected' or 'average'"), ("alpha_scaling", "'uniform' or 'inverse_share'")],
)
def test_unknown_values_are_refused_naming_the_field(field: str, allowed: str) -> None:
    with pytest.raises(SpecError) as err:
        _spec(**{field: "official"})
    assert err.value.errors[0][0] == f"algorithm.feddyn.{field}"
    assert allowed in err.value.errors[0][1]


def test_average_evaluates_the_plain_mean_of_the_uploads() -> None:
    """Round 1 on tiny data: the model the Federation evaluates holds mean_k(θ_k) (with the
    averaged BN statistics), the metrics and val_acc are that model's, and θ^t is put back."""
    # Prepare
    sim = Simulation(_spec(evaluate="average"))
    algo = _feddyn(sim)
    seen: list[dict[str, torch.Tensor]] = []
    evaluate = algo.fed.evaluate

    def recording() -> Evaluation:
        seen.append(_params(sim))
        return evaluate()

    algo.fed.evaluate = recording  # type: ignore[method-assign]
    uploads = _round_with_uploads(sim, 1)
    broadcast = _params(sim)
    # Execute
    ev = algo.evaluate()
    # Assert
    (evaluated,) = seen
    for k in algo.keys:
        mean = sum((u.params[k] for u in uploads), torch.zeros_like(broadcast[k])) / len(uploads)
        torch.testing.assert_close(evaluated[k], mean, rtol=1e-6, atol=1e-7)
    assert any(not torch.equal(evaluated[k], broadcast[k]) for k in algo.keys)
    assert all(torch.equal(v, broadcast[k]) for k, v in _params(sim).items())  # θ^t back
    # The same numbers as the Federation's evaluation of a global model set to the mean.
    state = algo.fed.global_model.state_dict()
    with torch.no_grad():
        for k, v in evaluated.items():
            state[k].copy_(v)
    _same_evaluation(ev, evaluate())


def test_average_val_acc_is_the_plain_means() -> None:
    # Prepare
    spec = tiny_spec(
        algorithm={"name": "feddyn", "alpha": 0.1, "evaluate": "average"},
        partition={"val_fraction": 0.2},
    )
    sim = Simulation(spec)
    algo = _feddyn(sim)
    _round_with_uploads(sim, 1)
    assert algo.average is not None
    # Execute
    got = evaluate_validation(algo.validation_logits(), sim.data, spec.eval_batch_size)
    # Assert
    state = algo.fed.global_model.state_dict()
    with torch.no_grad():
        for k, v in algo.average.items():
            state[k].copy_(v)
    want = evaluate_validation(algo.fed.global_model.eval(), sim.data, spec.eval_batch_size)
    assert got == pytest.approx(want, rel=1e-6)


def test_average_broadcasts_what_corrected_does_and_reports_other_metrics() -> None:
    """Three rounds: the broadcast models, h and every g_k are bit for bit `corrected`'s;
    only the reported metrics differ (round 0 evaluates the initial model under both)."""
    # Prepare
    corrected, average = Simulation(_spec()), Simulation(_spec(evaluate="average"))
    # Execute
    initial = (corrected.initial_event(), average.initial_event())
    events = [(corrected.round(r), average.round(r)) for r in (1, 2, 3)]
    # Assert
    c_state, a_state = corrected.algo.state_dict(), average.algo.state_dict()
    for key in ("global", "feddyn_h"):
        assert all(torch.equal(v, a_state[key][k]) for k, v in c_state[key].items()), key
    for user, g in c_state["feddyn_grads"]["made"].items():
        assert all(torch.equal(v, a_state["feddyn_grads"]["made"][user][k]) for k, v in g.items())
    assert initial[0].metrics["test_loss"] == initial[1].metrics["test_loss"]
    for c, a in events:
        assert c.metrics["train_loss"] == a.metrics["train_loss"]
        assert c.metrics["feddyn_h_norm"] == a.metrics["feddyn_h_norm"]
        assert c.metrics["test_loss"] != a.metrics["test_loss"]


def test_user_alphas_scale_by_the_inverse_data_share() -> None:
    assert user_alphas(0.1, "uniform", [10, 30]) == [0.1, 0.1]
    assert user_alphas(0.1, "inverse_share", [10, 30]) == pytest.approx([0.2, 0.1 * 20 / 30])
    assert user_alphas(0.1, "inverse_share", [7, 7, 7]) == pytest.approx([0.1] * 3)


def test_inverse_share_uses_each_users_alpha_in_g_k_h_and_the_local_term() -> None:
    """Round 1 from g_k = h = 0 on tiny data: g_k = −α_k (θ_k − θ^0) with α_k = α·mean_n/n_k
    by hand; h = −(1/m) Σ α_k (θ_k − θ^0); θ^1 = mean(θ_k) − h/α; and user k's upload is the
    one a uniform run with α = α_k trains (its local term uses α_k)."""
    # Prepare
    alpha = 0.1
    sim = Simulation(_spec(alpha_scaling="inverse_share"))
    algo = _feddyn(sim)
    sizes = [u.num_train for u in sim.data.users]
    assert len({sizes[k] for k in CHOSEN}) == len(CHOSEN), "equal sizes hide the scaling"
    by_hand = {k: alpha * (sum(sizes) / len(sizes)) / sizes[k] for k in CHOSEN}
    theta0 = _params(sim)
    # Execute
    uploads = _round_with_uploads(sim, 1)
    # Assert
    m = len(sizes)
    for k in algo.keys:
        h = -sum(by_hand[u.user] * (u.params[k] - theta0[k]) for u in uploads) / m
        torch.testing.assert_close(algo.h[k], h, rtol=1e-5, atol=1e-8)
        mean = torch.stack([u.params[k] for u in uploads]).mean(dim=0)
        torch.testing.assert_close(_params(sim)[k], mean - h / alpha, rtol=1e-5, atol=1e-7)
    for upload in uploads:
        g_k = algo.grads.peek(upload.user)
        for k in algo.keys:
            want = -by_hand[upload.user] * (upload.params[k] - theta0[k])
            torch.testing.assert_close(g_k[k], want, rtol=1e-5, atol=1e-8)
    # User 0's local training is a uniform run's with α = α_0 (round 1: same θ^0, batches).
    user = CHOSEN[1]
    same = Simulation(tiny_spec(algorithm={"name": "feddyn", "alpha": by_hand[user]}))
    (theirs,) = same.train_sequential([user], 1)[0]
    ours = next(u for u in uploads if u.user == user)
    for k in algo.keys:
        torch.testing.assert_close(ours.params[k], theirs.params[k], rtol=1e-6, atol=1e-7)
    plain = Simulation(_spec())
    (uniform,) = plain.train_sequential([user], 1)[0]
    assert any(not torch.equal(ours.params[k], uniform.params[k]) for k in algo.keys)


@pytest.mark.parametrize(
    "option", [{"evaluate": "average"}, {"alpha_scaling": "inverse_share"}], ids=str
)
def test_batched_round_with_server_update_agrees_with_sequential(option: dict[str, Any]) -> None:
    """A whole round (training, g_k, h, θ^t and the evaluation) batched and sequentially, from
    the same non-zero g_k and h, agree within float tolerance."""
    # Prepare
    spec = {"lr": 0.01, "algorithm": {"name": "feddyn", "alpha": 0.1, **option}}
    seq = Simulation(tiny_spec(**spec))
    bat = Simulation(tiny_spec(**spec, execution="batched", batch_clients=2))
    assert (seq.execution.mode, bat.execution.mode) == ("sequential", "batched")
    gen = torch.Generator().manual_seed(3)
    state = seq.algo.state_dict()
    h = state["feddyn_h"]
    state["feddyn_h"] = {k: 0.1 * torch.randn(v.shape, generator=gen) for k, v in h.items()}
    state["feddyn_grads"] = [
        {k: 0.1 * torch.randn(v.shape, generator=gen) for k, v in h.items()} for _ in seq.data.users
    ]
    seq.algo.load_state_dict(state)
    bat.algo.load_state_dict(state)
    start = seq.algo.fed.global_state()
    # Execute
    ups_s, _, _ = seq.train_sequential(CHOSEN, 2)
    ups_b, _, _ = bat.train_batched(CHOSEN, 2)
    seq.algo.server_update(ups_s, 2)
    bat.algo.server_update(ups_b, 2)
    ev_s, ev_b = seq.algo.evaluate(), bat.algo.evaluate()
    # Assert
    a, b = seq.algo.state_dict(), bat.algo.state_dict()
    for key in ("global", "feddyn_h"):
        for k, v in a[key].items():
            torch.testing.assert_close(b[key][k], v, rtol=1e-4, atol=1e-5)
    for user, g in a["feddyn_grads"]["made"].items():
        for k, v in g.items():
            torch.testing.assert_close(b["feddyn_grads"]["made"][user][k], v, rtol=1e-4, atol=1e-5)
    assert ev_b.global_loss == pytest.approx(ev_s.global_loss, rel=1e-4)
    # The round really moved the model (a no-op would agree too).
    assert max(float((a["global"][k] - start[k]).abs().max()) for k in h) > 1e-4
