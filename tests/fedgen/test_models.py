"""Models declared once (fedgen.models.registry): the new models learn, every algorithm runs on
ResNet-18, batched agrees with sequential per client, a model meets only datasets of its
input shape, `execution: auto` reads the model's measured speed, and a `fedgen.models` plugin
is registered like a built-in."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from fedgen import plugins
from fedgen.algorithms.registry import builtin_algorithms
from fedgen.events import MemorySink
from fedgen.execution import choose
from fedgen.models.cnn import build_model
from fedgen.models.decl import ModelConfig
from fedgen.models.registry import get_model, model_names, register_model, unregister_model
from fedgen.runner import Simulation, run
from fedgen.spec import SpecError, parse_spec
from fedgen.specdict import merge
from tests.fedgen.test_batched import _client_rel_diff, _max_rel_diff
from tests.support.rgb32 import rgb32_dataset
from tests.support.specs import BASELINES_32

pytestmark = pytest.mark.slow  # real training of the new models


@pytest.fixture(scope="module")
def rgb32() -> Iterator[str]:
    with rgb32_dataset() as name:
        yield name


def _rgb32_spec(name: str, **overrides: Any) -> Any:
    """Two tiny rounds on the 3x32x32 task: 3 users, 2 a round, one step of 4 samples."""
    base: dict[str, Any] = {
        "data": {"name": name, "synthetic_samples": 120},
        "model": {"name": "resnet18"},
        "partition": {"num_users": 3, "alpha": 1.0, "min_samples": 10},
        "users_per_round": 2,
        "rounds": 2,
        "local_steps": 1,
        "batch_size": 4,
        "eval_batch_size": 64,
        "lr": 0.01,
        "checkpoint_every": 0,
    }
    return parse_spec(merge(base, overrides))


# -- each new model learns a small task of its input shape ---------------------------------


def _task(shape: tuple[int, int, int], n: int = 8, classes: int = 4) -> Any:
    """`n` samples of `classes` random prototypes plus noise: separable, to be fitted."""
    gen = torch.Generator().manual_seed(0)
    protos = torch.randn(classes, *shape, generator=gen)
    y = torch.arange(n) % classes
    return protos[y] + 0.3 * torch.randn(n, *shape, generator=gen), y


@pytest.mark.parametrize(
    ("name", "norm", "shape", "adam", "lr"),
    [
        ("resnet18", "group", (3, 32, 32), False, 0.05),
        ("resnet18", "batch", (3, 32, 32), False, 0.05),
        ("cifar-cnn", "none", (3, 32, 32), True, 1e-3),
        ("mlr", "none", (1, 1, 60), False, 0.5),
    ],
)
def test_new_model_learns_a_small_task_of_its_shape(
    name: str, norm: str, shape: tuple[int, int, int], adam: bool, lr: float
) -> None:
    x, y = _task(shape)
    c, h, w = shape
    model = build_model(ModelConfig(name, c, h, 4, norm, w), 0)
    assert model.latent_dim == get_model(name).latent(shape)
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=lr) if adam else torch.optim.SGD(params, lr=lr)
    losses = []
    for _ in range(10):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        losses.append(float(loss.detach()))
    with torch.no_grad():
        acc = float((model(x).argmax(1) == y).float().mean())
    assert losses[-1] < 0.7 * losses[0], losses
    assert acc >= 0.75, losses


# -- every algorithm on ResNet-18 ---------------------------------------------------------

SMALL: dict[str, dict[str, Any]] = {
    **BASELINES_32,
    "fedgen": {"name": "fedgen", "gen_batch_size": 4, "server_batch_size": 4},
    "feddf": {"name": "feddf", "proxy_size": 8, "distill_steps": 1, "distill_batch_size": 4},
}


@pytest.mark.parametrize("algorithm", sorted(d.name for d in builtin_algorithms()))
def test_every_algorithm_runs_two_rounds_on_resnet18(rgb32: str, algorithm: str) -> None:
    spec = _rgb32_spec(rgb32, algorithm=SMALL.get(algorithm, {"name": algorithm}))
    sim = Simulation(spec)
    if algorithm == "fedgen":  # the generator produces ResNet-18's 512 latent features
        gen = sim.algo.generator  # type: ignore[attr-defined]
        assert gen.cfg.latent_dim == 512
        assert gen.cfg.hidden_dim == 512  # the default preset's 256, widened x2
    sink = MemorySink()
    run(spec, sink)
    assert [e.round for e in sink.events][-1] == 2
    assert all(torch.isfinite(torch.tensor(e.metrics["test_loss"])) for e in sink.events[1:])


# -- batched agrees with sequential per client --------------------------------------------

AGREEMENT: list[tuple[str, dict[str, Any]]] = [
    ("resnet18-gn-fedavg", {"model": {"name": "resnet18"}}),
    ("resnet18-bn-fedavg", {"model": {"name": "resnet18", "norm": "batch"}}),
    (
        "resnet18-gn-fedgen",
        {"model": {"name": "resnet18"}, "algorithm": SMALL["fedgen"], "rounds": 3},
    ),
    ("cifar-cnn-fedavg", {"model": {"name": "cifar-cnn"}}),
    ("cifar-cnn-fedprox", {"model": {"name": "cifar-cnn"}, "algorithm": {"name": "fedprox"}}),
]


@pytest.mark.parametrize(("case", "overrides"), AGREEMENT, ids=[c for c, _ in AGREEMENT])
def test_batched_agrees_with_sequential_per_client(
    rgb32: str, case: str, overrides: dict[str, Any]
) -> None:
    kw = {"local_steps": 3, "partition": {"num_users": 4}, "users_per_round": 3, **overrides}
    seq = Simulation(_rgb32_spec(rgb32, **kw))
    bat = Simulation(_rgb32_spec(rgb32, **kw, execution="batched", batch_clients=2))
    assert (seq.execution.mode, bat.execution.mode) == ("sequential", "batched"), case
    server_round = 2 if "fedgen" in case else 1  # FedGen's regulariser from round 2
    # BatchNorm over 4 samples (2x2 maps at the last stage) divides by small batch variances:
    # the rounding of grouped vs plain convolutions reaches about 1e-4 in 3 steps there.
    tol = 5e-4 if "-bn-" in case else 1e-4
    chosen = [3, 0, 2]
    ups_s, _, _ = seq.train_sequential(chosen, server_round)
    ups_b, _, _ = bat.train_batched(chosen, server_round)
    for us, ub in zip(ups_s, ups_b, strict=True):
        assert _client_rel_diff(us.params, ub.params) <= tol, (case, us.user)
        assert _client_rel_diff(us.buffers, ub.buffers) <= tol, (case, us.user)
        assert us.train_loss is not None
        assert ub.train_loss is not None
        assert _max_rel_diff(us.train_loss, ub.train_loss) <= tol
        local_s, local_b = seq.algo.fed.user_local[us.user], bat.algo.fed.user_local[us.user]
        assert _client_rel_diff(local_s, local_b) <= tol, (case, us.user)
    start = seq.algo.fed.global_state()
    assert max(_max_rel_diff(start[k], ups_b[0].params[k]) for k in ups_b[0].params) > 1e-5


# -- shapes, auto, plugins -----------------------------------------------------------------


def test_model_and_dataset_of_other_shapes_name_both_fields(rgb32: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec({"model": {"name": "resnet18"}, "data": {"name": "fashion-mnist"}})
    fields = dict(err.value.errors)
    assert set(fields) == {"model.name", "data.name"}
    assert "32x32" in fields["model.name"]
    assert "1x28x28" in fields["model.name"]
    assert parse_spec({"model": {"name": "cifar-cnn"}, "data": {"name": rgb32}})
    # mlr takes any input flattened; a norm is refused where the model has no choice.
    assert parse_spec({"model": {"name": "mlr"}, "data": {"name": "fashion-mnist"}})
    with pytest.raises(SpecError) as err:
        parse_spec({"model": {"name": "mlr", "norm": "group"}})
    assert dict(err.value.errors) == {"model.norm": "model mlr has no norm choice"}
    # FedDF's proxy must have the data's shape too.
    with pytest.raises(SpecError) as err:
        parse_spec(
            {
                "model": {"name": "resnet18"},
                "data": {"name": rgb32},
                "algorithm": {"name": "feddf", "proxy": "mnist"},
            }
        )
    assert "algorithm.proxy" in dict(err.value.errors)


def test_default_model_spec_keeps_its_identity(rgb32: str) -> None:
    spec = parse_spec({})
    assert "norm" not in spec.model_dump(mode="json")["model"]
    assert spec.model.resolved_norm == "none"
    rn = parse_spec({"model": {"name": "resnet18"}, "data": {"name": rgb32}})
    assert rn.model.resolved_norm == "group"
    bn = parse_spec({"model": {"name": "resnet18", "norm": "batch"}, "data": {"name": rgb32}})
    assert bn.spec_hash() != rn.spec_hash()


def test_auto_follows_the_models_measured_cpu_speed() -> None:
    model = build_model(ModelConfig("official-cnn", 1, 28, 10), 0)
    cpu = torch.device("cpu")
    slow = dataclasses.replace(
        get_model("official-cnn"),
        name="slow-batched",
        cpu_batched_speedup=0.8,
        speed_note="a test",
    )
    fast = dataclasses.replace(slow, name="fast-batched", cpu_batched_speedup=1.5)
    register_model(slow)
    register_model(fast)
    try:
        kw: dict[str, Any] = {"device": cpu, "threads": 2, "batchable": True, "model": model}
        mode, reason = choose("auto", model_name="slow-batched", **kw)
        assert mode == "sequential"
        assert "0.80x" in reason
        assert "a test" in reason
        mode, reason = choose("auto", model_name="fast-batched", **kw)
        assert (mode, "1.50x" in reason) == ("batched", True)
        assert choose("batched", model_name="slow-batched", **kw)[0] == "batched"
        assert choose("auto", model_name="official-cnn", **kw)[0] == "batched"
    finally:
        unregister_model("slow-batched")
        unregister_model("fast-batched")


PLUGIN = """
from fedgen.models.builtin import BUILTINS
import dataclasses

def build(cfg):
    from fedgen.models.cnn import build_mlr
    return build_mlr(cfg)

DECL = dataclasses.replace(
    [d for d in BUILTINS if d.name == "mlr"][0],
    name="tiny-mlr",
    label="Tiny MLR",
    builder=build,
)
"""


@pytest.fixture
def model_plugin(tmp_path: Path) -> Iterator[None]:
    """A distribution `fedgen-tinymodel` whose `fedgen.models` entry point is a ModelDecl."""
    (tmp_path / "fedgen_tinymodel.py").write_text(PLUGIN)
    info = tmp_path / "fedgen_tinymodel-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fedgen-tinymodel\nVersion: 0.1.0\n"
    )
    (info / "entry_points.txt").write_text("[fedgen.models]\ntiny-mlr = fedgen_tinymodel:DECL\n")
    sys.path.insert(0, str(tmp_path))
    try:
        plugins.load(force=True)
        yield
    finally:
        sys.path.remove(str(tmp_path))
        unregister_model("tiny-mlr")
        sys.modules.pop("fedgen_tinymodel", None)
        plugins.load(force=True)


def test_model_plugin_entry_point_is_registered_and_runs(model_plugin: None) -> None:
    record = [r for r in plugins.load() if r.kind == "model"]
    assert [(r.name, r.provides, r.distribution, r.ok) for r in record] == [
        ("tiny-mlr", "tiny-mlr", "fedgen-tinymodel", True)
    ]
    assert "tiny-mlr" in model_names()
    assert get_model("tiny-mlr").source == "fedgen-tinymodel"
    assert "model" in plugins.table(plugins.load())
    spec = parse_spec(
        {
            "data": {"name": "synthetic", "synthetic_samples": 200, "synthetic_classes": 4},
            "partition": {"num_users": 2, "alpha": 1.0},
            "model": {"name": "tiny-mlr"},
            "users_per_round": 2,
            "rounds": 1,
            "local_steps": 2,
            "checkpoint_every": 0,
        }
    )
    sink = MemorySink()
    run(spec, sink)
    assert sink.events[-1].round == 1
