"""`execution: batched` (issue 33): a round's clients as one stacked computation.

Batched and sequential updates agree per client within float tolerance; batched runs repeat
bit for bit and resume as if uninterrupted; `auto` picks sequential on one thread.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from fedgen.events import MemorySink, RoundEvent
from fedgen.execution import choose, chunk_size, client_bytes
from fedgen.runner import Simulation, run
from fedgen.spec import SpecError, parse_spec
from tests.support.specs import tiny_spec

pytestmark = pytest.mark.slow  # batched against sequential runs: real training

FEDGEN: dict[str, Any] = {"name": "fedgen", "gen_batch_size": 4, "server_batch_size": 4}
# (case, spec overrides, server round): FedGen's regulariser starts after round 1 (official).
AGREEMENT: list[tuple[str, dict[str, Any], int]] = [
    ("fedavg", {"algorithm": {"name": "fedavg"}}, 1),
    ("fedavg-paper", {"algorithm": {"name": "fedavg"}, "fidelity": {"profile": "paper"}}, 1),
    ("fedavg-predictor", {"algorithm": {"name": "fedavg"}, "share": "predictor"}, 1),
    ("fedprox-paper", {"algorithm": {"name": "fedprox", "mu": 1.0}}, 1),
    ("fedprox-official", {"algorithm": {"name": "fedprox", "variant": "official"}}, 1),
    ("fedensemble", {"algorithm": {"name": "fedensemble"}}, 1),
    ("feddf", {"algorithm": {"name": "feddf", "proxy_size": 50, "distill_steps": 2}}, 1),
    ("fedgen-official", {"algorithm": FEDGEN}, 2),
    ("fedgen-paper", {"algorithm": FEDGEN, "fidelity": {"profile": "paper"}}, 1),
    ("fedgen-predictor", {"algorithm": FEDGEN, "share": "predictor"}, 2),
    # Batches of 64 exceed some users' data: stacks of different batch shapes.
    ("fedgen-small-users", {"algorithm": FEDGEN, "batch_size": 64}, 2),
    # The server optimisers train FedAvg's clients (their moments move on the server).
    ("fedavgm", {"algorithm": {"name": "fedavgm", "server_momentum": 0.9}}, 2),
    ("fedadam", {"algorithm": {"name": "fedadam"}}, 2),
    ("fedyogi", {"algorithm": {"name": "fedyogi"}, "share": "predictor"}, 2),
    # Gradient corrections from state kept per client (seeded non-zero: see KEPT).
    ("scaffold", {"algorithm": {"name": "scaffold"}}, 2),
    # Each client its own lr (per-user clocks below): c_i⁺ divides by the client's K·η_l.
    ("scaffold-own-lrs", {"algorithm": {"name": "scaffold"}, "lr_decay": 0.5}, 3),
    ("feddyn", {"algorithm": {"name": "feddyn", "alpha": 0.1}}, 2),
    # Each stacked client its own α_k = α·mean_n/n_k (issue 39).
    (
        "feddyn-inverse-share",
        {"algorithm": {"name": "feddyn", "alpha": 0.1, "alpha_scaling": "inverse_share"}},
        2,
    ),
    ("feddyn-average", {"algorithm": {"name": "feddyn", "alpha": 0.1, "evaluate": "average"}}, 2),
]
# The algorithm state an agreement case starts non-zero and compares after the round (per
# user where it is a list): at zeros, as a fresh run holds it, SCAFFOLD's c − c_i and
# FedDyn's g_k would correct nothing, and a wrongly ordered stack of them would pass.
KEPT: dict[str, tuple[str, ...]] = {
    "scaffold": ("scaffold_c", "scaffold_c_users"),
    "feddyn": ("feddyn_h", "feddyn_grads"),
}
# Users' last trained rounds (the official per-user lr clock) set before a case's round.
LR_CLOCKS: dict[str, list[int]] = {"scaffold-own-lrs": [2, 0, 1, 0, 2]}


def _max_rel_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    scale = torch.maximum(a.abs().max(), b.abs().max()).clamp(min=1e-12)
    return float((a.float() - b.float()).abs().max() / scale)


def _client_rel_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """max |a - b| over all of a client's tensors, relative to their largest magnitude.

    One scale per client, not per tensor: BatchNorm biases start at 0, so after a round
    they hold only lr x a sum of gradients that nearly cancel, whose last bits move with
    the summation order (about 2e-7 absolute on values of 4e-4 here).
    """
    assert a.keys() == b.keys()
    if not a:
        return 0.0
    fa = torch.cat([a[k].float().flatten() for k in sorted(a)])
    fb = torch.cat([b[k].float().flatten() for k in sorted(b)])
    return _max_rel_diff(fa, fb)


def _seed_kept_state(sims: list[Simulation], keys: tuple[str, ...]) -> None:
    """Load the same random values of the kept state `keys` into every simulation."""
    gen = torch.Generator().manual_seed(7)
    state = sims[0].algo.state_dict()

    def noise(t: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        # About the gradients' size, so the correction matters but keeps the run tame.
        return {k: 0.1 * torch.randn(v.shape, generator=gen) for k, v in t.items()}

    users = len(sims[0].data.users)
    for key in keys:
        value = state[key]
        if isinstance(value, dict) and "made" in value:  # per user (client_state.PerUser)
            # Every user's entry, shaped like the server's state (the first key).
            state[key] = [noise(state[keys[0]]) for _ in range(users)]
        else:
            state[key] = noise(value)
    for sim in sims:
        sim.algo.load_state_dict(state)


def _kept_rel_diffs(seq: Simulation, bat: Simulation, keys: tuple[str, ...]) -> dict[str, float]:
    """Per kept-state entry (per user where it is a list), the relative difference."""
    a, b = seq.algo.state_dict(), bat.algo.state_dict()
    out: dict[str, float] = {}
    for key in keys:
        if isinstance(a[key], dict) and "made" in a[key]:
            assert a[key]["made"].keys() == b[key]["made"].keys()
            for i, ta in a[key]["made"].items():
                out[f"{key}[{i}]"] = _client_rel_diff(ta, b[key]["made"][i])
        else:
            out[key] = _client_rel_diff(a[key], b[key])
    return out


@pytest.mark.parametrize(
    ("case", "overrides", "server_round"), AGREEMENT, ids=[c for c, _, _ in AGREEMENT]
)
def test_batched_round_agrees_with_sequential_per_client(
    case: str, overrides: dict[str, Any], server_round: int
) -> None:
    # lr 0.01: a tame run (at tiny_spec's 0.05 FedGen's losses reach 50-150 and any
    # reordering of float sums grows round over round).
    spec = {"lr": 0.01, **overrides, "users_per_round": 4}
    seq = Simulation(tiny_spec(**spec))
    bat = Simulation(tiny_spec(**spec, execution="batched", batch_clients=3))
    assert (seq.execution.mode, bat.execution.mode) == ("sequential", "batched")
    kept = KEPT.get(overrides["algorithm"]["name"], ())
    _seed_kept_state([seq, bat], kept)
    if case in LR_CLOCKS:
        seq.lr_clock, bat.lr_clock = list(LR_CLOCKS[case]), list(LR_CLOCKS[case])
    chosen = [4, 0, 2, 1]
    ups_s, _, lrs_s = seq.train_sequential(chosen, server_round)
    ups_b, _, lrs_b = bat.train_batched(chosen, server_round)
    assert lrs_s == lrs_b
    assert case not in LR_CLOCKS or len(set(lrs_b)) > 1
    assert [u.user for u in ups_b] == chosen
    for us, ub in zip(ups_s, ups_b, strict=True):
        assert _client_rel_diff(us.params, ub.params) <= 1e-4, us.user
        assert _client_rel_diff(us.buffers, ub.buffers) <= 1e-4, us.user
        assert us.train_loss is not None
        assert ub.train_loss is not None
        assert _max_rel_diff(us.train_loss, ub.train_loss) <= 1e-4
        if us.label_counts is not None:
            assert ub.label_counts is not None
            assert torch.equal(us.label_counts, ub.label_counts)
        local_s, local_b = seq.algo.fed.user_local[us.user], bat.algo.fed.user_local[us.user]
        assert _client_rel_diff(local_s, local_b) <= 1e-4, us.user
        assert _client_rel_diff(us.extras, ub.extras) <= 1e-4, us.user  # SCAFFOLD's Δc_i
    # Every user's kept state (the chosen users' updated, the others' untouched).
    for entry, diff in _kept_rel_diffs(seq, bat, kept).items():
        assert diff <= 1e-4, entry
    # The local steps really moved the models (a no-op would agree too).
    start = seq.algo.fed.global_state()
    moved = max(_max_rel_diff(start[k], ups_b[0].params[k]) for k in ups_b[0].params)
    assert moved > 1e-3


def _records(events: list[RoundEvent]) -> list[Any]:
    return [
        (
            e.round,
            sorted((k, v) for k, v in e.metrics.items() if "_ms" not in k),
            [(u.user, u.test_acc, u.test_loss, u.train_loss) for u in e.users],
        )
        for e in events
    ]


@pytest.mark.parametrize("algorithm", [{"name": "fedavg"}, FEDGEN], ids=["fedavg", "fedgen"])
def test_batched_runs_repeat_bit_for_bit(algorithm: dict[str, Any]) -> None:
    spec = tiny_spec(algorithm=algorithm, execution="batched", batch_clients=2, rounds=3)
    first, second = MemorySink(), MemorySink()
    run(spec, first)
    run(spec, second)
    assert _records(first.events) == _records(second.events)
    assert first.info is not None
    assert (first.info.execution, first.info.batch_clients) == ("batched", 2)


@pytest.mark.parametrize(
    "algorithm",
    [
        {"name": "fedprox", "mu": 0.1},
        FEDGEN,
        {"name": "scaffold"},
        # Server state across the checkpoint: FedDyn's h and users' gradients, the FedOpt
        # family's moments and momentum.
        {"name": "feddyn"},
        # FedDyn's variants (issue 39): the evaluated mean is made by the round evaluating it.
        {"name": "feddyn", "evaluate": "average", "alpha_scaling": "inverse_share"},
        {"name": "fedadam"},
        {"name": "fedyogi"},
        {"name": "fedavgm"},
    ],
    ids=[
        "fedprox",
        "fedgen",
        "scaffold",
        "feddyn",
        "feddyn-variants",
        "fedadam",
        "fedyogi",
        "fedavgm",
    ],
)
def test_batched_resume_equals_uninterrupted(algorithm: dict[str, Any]) -> None:
    """A batched run resumed from round 2's checkpoint repeats rounds 3-4 bit for bit."""
    spec = tiny_spec(algorithm=algorithm, execution="batched", rounds=4, checkpoint_every=2)
    whole = MemorySink()
    run(spec, whole)
    full = [c for e in whole.events for c in e.checkpoints if c.kind == "full" and c.round == 2]
    resumed = MemorySink()
    run(spec, resumed, resume_from=full[0].data)
    assert resumed.info is not None
    assert resumed.info.execution == "batched"
    assert _records(resumed.events) == _records(whole.events[3:])


def test_auto_picks_sequential_on_one_thread_and_batched_on_two() -> None:
    model = Simulation(tiny_spec()).algo.fed.global_model
    cpu = torch.device("cpu")

    def pick(requested: str, threads: int, batchable: bool = True) -> str:
        return choose(requested, device=cpu, threads=threads, batchable=batchable, model=model)[0]

    assert pick("auto", 1) == "sequential"
    assert pick("auto", 2) == "batched"
    assert pick("auto", 2, batchable=False) == "sequential"
    assert pick("batched", 1) == "batched"
    assert pick("sequential", 4) == "sequential"


def test_auto_run_records_what_it_picked() -> None:
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        sink = MemorySink()
        run(tiny_spec(execution="auto", rounds=1), sink)
    finally:
        torch.set_num_threads(before)
    assert sink.info is not None
    assert sink.info.execution == "sequential"
    assert "1 CPU thread" in sink.info.execution_reason
    assert sink.info.to_dict()["execution"] == "sequential"


def test_unbatchable_algorithm_runs_sequentially_and_says_why() -> None:
    sim = Simulation(tiny_spec(algorithm={"name": "feddistill"}, execution="batched"))
    assert sim.execution.mode == "sequential"
    assert "does not batch" in sim.execution.reason


def test_default_execution_leaves_old_spec_identity_unchanged() -> None:
    plain = tiny_spec()
    explicit = tiny_spec(execution="sequential", batch_clients="auto")
    assert "execution" not in plain.canonical_json()
    assert plain.spec_hash() == explicit.spec_hash()
    assert plain.result_hash() == explicit.result_hash()
    assert tiny_spec(execution="batched").result_hash() != plain.result_hash()


@pytest.mark.parametrize("bad", [0, 1001, True, "8", -1])
def test_batch_clients_bounds_name_the_field_and_limit(bad: Any) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec({"batch_clients": bad}, strict=True)
    assert err.value.errors[0][0] == "batch_clients"
    assert "1 to 1000" in err.value.errors[0][1]


def test_chunks_are_equal_and_bounded() -> None:
    assert chunk_size(8, 50, per_client=1, free=None) == 8  # 7 chunks of at most 8
    assert chunk_size("auto", 50, per_client=10, free=10 * 4 * 48) == 25  # fits 48: 25 + 25
    assert chunk_size("auto", 10, per_client=10, free=None) == 10
    assert chunk_size("auto", 10, per_client=10**12, free=1) == 1
    assert chunk_size(100, 10, per_client=1, free=1) == 10


def test_fedgen_run_gives_new_runs_auto_and_keeps_what_a_spec_says() -> None:
    from fedgen.cli import _new_run_defaults

    assert _new_run_defaults({"rounds": 3})["execution"] == "auto"
    assert _new_run_defaults({"execution": "sequential"})["execution"] == "sequential"
    sweep = _new_run_defaults({"name": "s", "base": {"rounds": 3}, "grid": {"seed": [0, 1]}})
    assert sweep["base"]["execution"] == "auto"
    varied = {"name": "s", "grid": {"execution": ["sequential", "batched"]}}
    assert _new_run_defaults(varied) == varied


def test_chunk_estimate_counts_the_state_an_algorithm_stacks() -> None:
    """SCAFFOLD's and FedDyn's batched steps stack per-client state: auto chunks count it."""
    from fedgen.algorithms.registry import get_algorithm

    sim = Simulation(tiny_spec())
    model, shape = sim.algo.fed.global_model, sim.data.input_shape
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    plain = client_bytes(model, shape, 8)
    assert client_bytes(model, shape, 8, state_copies=2) - plain == 2 * params
    assert get_algorithm("feddyn").batched_state_copies == 2
    assert get_algorithm("scaffold").batched_state_copies == 1
    assert get_algorithm("fedavg").batched_state_copies == 0
