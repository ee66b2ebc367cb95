"""Cross-device scale: 10,000 users, per-user state made on first use, rows of the trained."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from fedgen.algorithms.scaffold import Scaffold
from fedgen.data.common import DatasetTensors
from fedgen.data.decl import DatasetDecl
from fedgen.data.registry import register_dataset, unregister_dataset
from fedgen.data_spec import DataSpec
from fedgen.runner import Simulation
from fedgen.sizes import checkpoint_estimate, users_ever_sampled
from fedgen.spec import PartitionSpec, SpecError, parse_spec
from fedgen.spec_base import MAX_USERS, MAX_USERS_PER_ROUND
from vocab.footprint import footprint_estimate, round_bytes

USERS = 10_000


def _many_users(data: DataSpec, partition: PartitionSpec) -> DatasetTensors:  # noqa: ARG001
    """Two 28x28 training images per user (natural users, as CelebA's), one test image each
    for every other user: small enough for a test at 10,000 users."""
    n = 2 * partition.num_users
    y = torch.arange(n) % 10
    g = torch.Generator().manual_seed(partition.data_seed)
    x = torch.randn(n, 1, 28, 28, generator=g) * 0.1 + y.view(-1, 1, 1, 1) / 10
    groups = (torch.arange(n) // 2).numpy()
    return DatasetTensors(
        "many-users", x, y, x[::4].clone(), y[::4].clone(), 10, groups, groups[::4].copy()
    )


@pytest.fixture
def many_users() -> Iterator[None]:
    register_dataset(DatasetDecl("many-users", "Many users", (1, 28, 28), 10, _many_users))
    yield
    unregister_dataset("many-users")


def _scaffold(sim: Simulation) -> Scaffold:
    assert isinstance(sim.algo, Scaffold)
    return sim.algo


def _spec(**changes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "data": {"name": "many-users"},
        "partition": {"num_users": USERS},
        "algorithm": {"name": "scaffold"},
        # BN statistics averaged: the per-user protocol is then one pass over the test set.
        "model": {"bn_buffers": "average"},
        "users_per_round": 100,
        "rounds": 2,
        "local_steps": 2,
        "batch_size": 2,
        "checkpoint_every": 0,
        "eval_batch_size": 4096,
    }
    spec.update(changes)
    return spec


def test_the_limits_are_explicit() -> None:
    assert (MAX_USERS, MAX_USERS_PER_ROUND) == (10_000, 1000)
    with pytest.raises(SpecError, match=r"partition.num_users: .*10000"):
        parse_spec({"partition": {"num_users": USERS + 1}})
    with pytest.raises(SpecError, match=r"users_per_round: .*1000"):
        parse_spec({"partition": {"num_users": USERS}, "users_per_round": 1001})
    schema = parse_spec({}).model_json_schema()
    assert schema["properties"]["users_per_round"]["maximum"] == 1000


@pytest.mark.slow  # trains rounds of thousands of users
def test_ten_thousand_users_run_with_state_for_the_sampled_only(
    many_users: None,  # noqa: ARG001
    tmp_path: Path,
) -> None:
    spec = parse_spec(_spec())
    whole = Simulation(spec)
    first = whole.round(1)
    # Rows of the trained users only (above 1,000 users); the metrics cover everybody.
    assert len(first.users) == 100
    assert all(u.selected for u in first.users)
    # SCAFFOLD's c_i exist for the 100 users sampled, not the 10,000.
    assert len(_scaffold(whole).c_users.made) == 100
    state = whole.full_state(1)
    assert len(state["algorithm"]["scaffold_c_users"]["made"]) == 100
    path = tmp_path / "ck.pt"
    torch.save(state, path)
    second = whole.round(2)
    assert 100 < len(_scaffold(whole).c_users.made) <= 200
    # Resumed from round 1's checkpoint: round 2 as uninterrupted, bit for bit.
    resumed = Simulation(spec)
    resumed.restore(path)
    again = resumed.round(2)
    assert again.metrics["test_acc"] == second.metrics["test_acc"]
    assert again.metrics["train_loss"] == second.metrics["train_loss"]
    assert _scaffold(resumed).c_users.made.keys() == _scaffold(whole).c_users.made.keys()
    for u, c in _scaffold(whole).c_users.made.items():
        for k, v in c.items():
            assert torch.equal(v, _scaffold(resumed).c_users.made[u][k])


def test_the_estimate_counts_the_users_ever_sampled_and_refuses_a_small_quota(
    many_users: None,  # noqa: ARG001
) -> None:
    short = parse_spec(_spec(rounds=2))
    long = parse_spec(_spec(rounds=200))
    # The runner's draws replayed: 200 rounds of 100 draw about 10,000 x (1 - 0.99^200) =
    # 8,660 users, not min(10,000, 200 x 100) (users drawn again have their state already).
    sampled = users_ever_sampled(long)
    assert users_ever_sampled(short) <= 200
    assert 8_400 < sampled < 8_900
    fedavg = parse_spec(_spec(rounds=200, algorithm={"name": "fedavg"}))
    c_i = checkpoint_estimate(long).per_user - checkpoint_estimate(fedavg).per_user
    assert c_i > 0
    assert checkpoint_estimate(short).per_user - checkpoint_estimate(
        parse_spec(_spec(rounds=2, algorithm={"name": "fedavg"}))
    ).per_user == pytest.approx(c_i * users_ever_sampled(short) / sampled, rel=0.01)
    # Rows: the 100 trained users' a round, not 10,000.
    assert footprint_estimate(long, 1).rounds == 201 * round_bytes(100)
    # A member's quota of 100 MiB cannot hold 10,000 users' control variates.
    quota = 100 << 20
    assert footprint_estimate(short, 1).total < quota < footprint_estimate(long, 1).total


def test_per_user_models_are_evaluated_for_the_trained_users_only(
    many_users: None,  # noqa: ARG001
) -> None:
    """BN statistics kept on each user: every user has a model of its own; above 1,000 users
    a round runs (and reports) the trained users' alone, and its user figures are theirs."""
    spec = parse_spec(_spec(partition={"num_users": 2000}, users_per_round=20, model={}))
    sim = Simulation(spec)
    assert sim.algo.fed.local_keys  # the BN buffers stay on the users
    ran: list[int] = []
    real = sim.algo.fed.logits_with

    def counting(state: dict[str, torch.Tensor]) -> Any:
        ran.append(1)
        return real(state)

    sim.algo.fed.logits_with = counting  # type: ignore[method-assign]
    event = sim.round(1)
    assert len(event.users) == 20
    assert len(ran) <= 21  # the 20 trained users' models (and the global one)
    acc = [u.test_acc for u in event.users]
    assert event.metrics["user_acc_mean"] == pytest.approx(sum(acc) / 20)
    assert event.metrics["user_acc_min"] == min(acc)
    assert sim.algo.fed.eval_users is None  # only for that evaluation


def _metrics(event: Any) -> dict[str, float]:
    return {k: v for k, v in event.metrics.items() if "_ms" not in k}


@pytest.mark.slow  # trains rounds of thousands of users
def test_fedgen_label_counts_and_local_bn_state_grow_with_the_sampled_users(
    many_users: None,  # noqa: ARG001
    tmp_path: Path,
) -> None:
    """FedGen's per-user label counts and the users' own BatchNorm statistics exist for the
    users trained so far only (2,000 users, 20 a round), in memory and in the checkpoint; a
    run resumed from round 1 continues bit for bit."""
    from fedgen.algorithms.fedgen import FedGen

    spec = parse_spec(
        _spec(
            partition={"num_users": 2000},
            users_per_round=20,
            model={},  # BN statistics stay on each user
            algorithm={"name": "fedgen", "gen_batch_size": 4, "server_batch_size": 4},
        )
    )
    whole = Simulation(spec)
    algo = whole.algo
    assert isinstance(algo, FedGen)
    assert algo.fed.local_keys
    first = whole.round(1)
    assert len(algo.user_counts) == 20 == len(algo.fed.user_local.made)
    assert set(algo.fed.user_local.made) == {u.user for u in first.users}
    state = whole.full_state(1)
    assert state["algorithm"]["fedgen"]["user_counts"]["rows"].shape == (20, 10)
    assert len(state["algorithm"]["user_local"]["made"]) == 20
    path = tmp_path / "ck.pt"
    torch.save(state, path)
    second = whole.round(2)
    assert 20 < len(algo.user_counts) <= 40
    resumed = Simulation(spec)
    resumed.restore(path)
    again = resumed.round(2)
    assert _metrics(again) == _metrics(second)
    assert [(u.user, u.test_acc, u.train_loss) for u in again.users] == [
        (u.user, u.test_acc, u.train_loss) for u in second.users
    ]
    other = resumed.algo
    assert isinstance(other, FedGen)
    assert torch.equal(other.prior(), algo.prior())
    assert other.fed.user_local.made.keys() == algo.fed.user_local.made.keys()


def test_label_count_rows_load_the_former_dense_table() -> None:
    """A checkpoint written before the rows were lazy holds every user's row: its non-zero
    rows are the users that reported; the total is the same."""
    from fedgen.algorithms.client_state import PerUserRows

    dense = torch.zeros(6, 3)
    dense[4] = torch.tensor([1.0, 0.0, 2.0])
    dense[1] = torch.tensor([0.0, 5.0, 0.0])
    rows = PerUserRows(6, 3, torch.device("cpu"))
    rows.load_state_dict(dense)
    assert len(rows) == 2
    assert torch.equal(rows.total(), dense.sum(0))
    assert torch.equal(rows[4], dense[4])
    assert torch.equal(rows[0], torch.zeros(3))
    again = PerUserRows(6, 3, torch.device("cpu"))
    again.load_state_dict(rows.state_dict())
    assert torch.equal(again.total(), dense.sum(0))
    with pytest.raises(ValueError, match="shape"):
        again.load_state_dict(torch.zeros(5, 3))
