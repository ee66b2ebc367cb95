"""Protocol twins: one training evaluated under both test protocols reports what separate
runs report; specs that differ otherwise, or an algorithm that trains by protocol, are refused;
`fedgen study run` groups its twins into one training each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fedgen import checkpoint
from fedgen.cli import main
from fedgen.events import MemorySink
from fedgen.protocol_twins import check_twins, twin_groups
from fedgen.runner import run, run_twins
from fedgen.spec import ExperimentSpec
from fedgen.studies import layouts, registry
from fedgen.studies.registry import StudyOverrides, plan
from fedgen.study_cli import load_result
from tests.support.specs import BASELINES_32, tiny_spec

# Every algorithm of the table1-extended study with small parameters (as the baseline tests).
ALGORITHMS: dict[str, dict[str, Any]] = {
    "fedavg": {"name": "fedavg"},
    "fedprox": {"name": "fedprox"},
    "fedgen": {"name": "fedgen", "gen_batch_size": 16},
    "feddf": {"name": "feddf", "proxy_size": 200, "distill_steps": 10, "distill_batch_size": 32},
    **BASELINES_32,
}
# FedDF's early stopping validates as the run evaluates: its training reads the protocol.
TRAINS_BY_PROTOCOL = {"feddf"}


def _pair(name: str, **kw: Any) -> list[ExperimentSpec]:
    return [
        tiny_spec(
            algorithm=ALGORITHMS[name],
            rounds=3,
            checkpoint_every=2,
            lr=0.02,
            partition={"test_protocol": protocol},
            **kw,
        )
        for protocol in ("per_user", "global")
    ]


def _report(sink: MemorySink) -> dict[str, Any]:
    """Everything a run reports but its timings (`*_ms`, wall_s); checkpoints decoded."""
    assert sink.info is not None
    assert sink.summary is not None
    rounds = [
        (
            e.round,
            {k: v for k, v in e.metrics.items() if not k.endswith("_ms")},
            [
                (u.user, u.test_acc, u.test_loss, u.num_test, u.selected, u.train_loss)
                for u in e.users
            ],
            [(c.kind, c.round, _decoded(c.data)) for c in e.checkpoints],
        )
        for e in sink.events
    ]
    summary = {k: v for k, v in sink.summary.to_dict().items() if k != "wall_s"}
    return {"info": sink.info.to_dict(), "rounds": rounds, "summary": summary}


def _decoded(data: bytes) -> str:
    """A checkpoint as comparable text (its tensors as lists)."""
    return repr(_plain(checkpoint.read(data, "cpu")))


def _plain(x: Any) -> Any:
    if hasattr(x, "tolist"):
        return x.tolist()
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    return x


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(ALGORITHMS) - TRAINS_BY_PROTOCOL))
def test_twins_report_what_separate_runs_report(name: str) -> None:
    """Per-user and global evaluation of one training: every metric but the timings, every
    user's figures, the checkpoints, info and summary equal two separate runs'."""
    # Prepare
    specs = _pair(name)
    separate = [MemorySink(), MemorySink()]
    for spec, sink in zip(specs, separate, strict=True):
        run(spec, sink)
    twins = [MemorySink(), MemorySink()]
    # Execute
    summaries = run_twins(specs, twins)
    # Assert
    for want, got in zip(separate, twins, strict=True):
        assert _report(got) == _report(want)
    assert summaries == [t.summary for t in twins]
    per_user, glob = (_report(t) for t in twins)
    assert per_user["info"]["fidelity"]["test_protocol"] == "per_user"
    assert glob["info"]["fidelity"]["test_protocol"] == "global"
    # The two protocols report differently, so a mix-up of the sinks would fail above.
    assert per_user != glob


@pytest.mark.slow
def test_twins_with_batched_execution() -> None:
    """The study runs batched: a batchable algorithm's twins still equal separate runs."""
    specs = _pair("fedavg", execution="batched")
    separate = [MemorySink(), MemorySink()]
    for spec, sink in zip(specs, separate, strict=True):
        run(spec, sink)
    twins = [MemorySink(), MemorySink()]
    run_twins(specs, twins)
    assert [_report(s) for s in twins] == [_report(s) for s in separate]
    assert all(s.info is not None and s.info.execution == "batched" for s in twins)


def test_specs_that_differ_otherwise_are_refused_naming_the_field() -> None:
    a, b = _pair("fedavg")
    other = tiny_spec(algorithm=ALGORITHMS["fedavg"], rounds=3, checkpoint_every=2, lr=0.05)
    with pytest.raises(ValueError, match=r"differs from spec 0 in lr; twins may differ only"):
        check_twins([a, other])
    with pytest.raises(ValueError, match="seed"):
        run_twins([a, b.model_copy(update={"seed": 1})], [MemorySink(), MemorySink()])
    with pytest.raises(ValueError, match="2 specs but 1 sinks"):
        run_twins([a, b], [MemorySink()])


def test_an_algorithm_that_trains_by_protocol_has_no_twins() -> None:
    """FedDF's distillation is validated as the run evaluates: refused, and grouped alone."""
    specs = _pair("feddf")
    with pytest.raises(ValueError, match="feddf's training reads partition.test_protocol"):
        check_twins(specs)
    assert twin_groups(specs) == [[0], [1]]


def test_grouping_pairs_the_protocols_of_each_setting() -> None:
    """table1-extended: 198 runs in 108 trainings (FedDF's 18 alone); each pair differs only
    in the protocol; every run is in exactly one group."""
    p = plan("table1-extended")
    groups = twin_groups(p.specs)
    assert sorted(i for g in groups for i in g) == list(range(p.runs))
    assert len(groups) == 99 + 9
    for g in groups:
        specs = [p.specs[i] for i in g]
        check_twins(specs)
        if specs[0].algorithm.name == "feddf":
            assert len(g) == 1
        else:
            assert sorted(s.model_dump()["partition"]["test_protocol"] for s in specs) == [
                "global",
                "per_user",
            ]
    # A study without protocol rows has no twins.
    t1 = plan("table1", StudyOverrides(seeds=1))
    assert twin_groups(t1.specs) == [[i] for i in range(t1.runs)]


def test_estimate_counts_one_training_per_group() -> None:
    """`fedgen study run`'s CPU estimate of table1-extended counts 108 trainings, not 198 runs."""
    from fedgen.studies.costs import estimate_cpu_s

    p = plan("table1-extended")
    per_run = sum(estimate_cpu_s(s) for s in p.specs)
    feddf = sum(estimate_cpu_s(s) for s in p.specs if s.algorithm.name == "feddf")
    assert p.est_cpu_s == pytest.approx(per_run)  # the lab's workers run each on its own
    assert p.est_local_cpu_s == pytest.approx((per_run - feddf) / 2 + feddf)


@pytest.mark.slow
def test_cli_study_run_trains_twins_once_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tiny table1-extended (FedAvg, FedDF; one seed): 12 runs in 9 trainings, each run in its
    own directory that `load_result` reads; a rerun with one run removed trains it alone."""
    # Prepare: the plumbing is under test, so the study is made tiny.
    small = {**registry.PAPER_SETTING, "users_per_round": 2, "local_steps": 2}
    monkeypatch.setattr(registry, "PAPER_SETTING", small)
    monkeypatch.setitem(registry.DATASET_FIELDS, "synthetic", {"synthetic_samples": 5000})
    feddf = {"proxy_size": 100, "distill_steps": 2, "distill_batch_size": 16}
    monkeypatch.setattr(layouts, "TABLE1_EXTENDED", (("fedavg", {}), ("feddf", feddf)))
    argv = ["study", "run", "table1-extended", "--dataset", "synthetic", "--seeds", "1"]
    argv += ["--rounds", "2", "--out", str(tmp_path)]
    # Execute
    code = main(argv)
    out = capsys.readouterr()
    # Assert
    assert code == 0
    first = out.err.splitlines()[0]
    assert "12 runs (0 already done" in first
    assert "9 trainings" in first
    assert sum(" completed · " in line for line in out.err.splitlines()) == 12
    assert "12/12 runs done" in out.out
    assert "per-user test" in out.out
    assert "global test" in out.out
    dirs = sorted(d for d in tmp_path.iterdir() if d.is_dir())
    assert len(dirs) == 12
    results = [load_result(d) for d in dirs]
    assert all(r.succeeded and len(r.acc) == 3 for r in results)
    fedavg = [d for d in dirs if "-fedavg-" in d.name]
    info = json.loads((fedavg[0] / "info.json").read_text())
    assert info["spec_hash"] == load_result(fedavg[0]).spec.spec_hash()
    # Resume: one run of a pair is pending again; it trains alone.
    (fedavg[0] / "summary.json").unlink()
    assert main(argv) == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert "(11 already done" in first
    assert "1 training" in first
