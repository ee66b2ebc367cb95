"""fedgen_lab against a live lab (Postgres, Redis, the API and a worker as processes): every
client method on real runs, in one lab."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import fedgen_lab
from fedgen_lab import lab as lab_module
from tests.support.factories import make_spec
from tests.support.live_lab import LiveLab, live_lab

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(600)]

# after_aggregation: round R's model (the `model` checkpoint) is the one its accuracy measures;
# BN statistics averaged: the global model alone is what the run evaluates (not users' own).
TINY = make_spec(
    rounds=3,
    algorithm={"name": "fedavg"},
    model={"bn_buffers": "average"},
    fidelity={"eval_timing": "after_aggregation"},
    tags=["client-test"],
)


@pytest.fixture(scope="module")
def lab(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    with live_lab(pg_url, tmp_path_factory.mktemp("client-lab")) as running:
        yield running


def _accuracy_of(model: object, spec: dict[str, Any]) -> float:
    """The model's global test accuracy on the run's own test set, as the runner measures it."""
    from fedgen.evaluation import evaluate_shared
    from fedgen.fidelity import resolve
    from fedgen.runner import Simulation
    from fedgen.spec import parse_spec

    parsed = parse_spec(spec)
    sim = Simulation(parsed)
    ev = evaluate_shared(model, sim.data, resolve(parsed).test_protocol, parsed.eval_batch_size)  # type: ignore[arg-type]
    return ev.global_acc


def test_a_run_from_submit_to_model(lab: LiveLab, monkeypatch: pytest.MonkeyPatch) -> None:
    client = fedgen_lab.connect(lab.url, lab.token)
    run = client.submit(TINY)
    assert run.status == "queued"
    bar = io.StringIO()
    assert run.wait(timeout=300, progress=True, out=bar).status == "succeeded", run.state.error
    assert f"round {TINY['rounds']}/{TINY['rounds']}" in bar.getvalue()

    metrics = run.metrics()
    assert list(metrics["round"]) == [0, 1, 2, 3]
    assert {"test_acc", "test_loss"} <= set(metrics.columns)
    users = run.users()
    assert set(users["round"]) == {0, 1, 2, 3}
    assert len(users) == 4 * 3
    assert run.info.num_users == 3

    ckpts = run.checkpoints()
    assert {c.kind for c in ckpts} >= {"full", "model"}
    data = run.download_checkpoint(kind="full", round=2)
    assert hashlib.sha256(data).hexdigest() == next(
        c.sha256 for c in ckpts if c.kind == "full" and c.round == 2
    )

    # The final model, rebuilt here, scores the run's last accuracy on its test set.
    model = run.model()
    final = float(metrics["test_acc"].iloc[-1])
    assert _accuracy_of(model, run.spec) == pytest.approx(final, abs=1e-6)

    run.annotate(tags=["client-test", "kept"], note="from the client")
    assert run.refresh().state.note == "from the client"

    # runs(): one row per run, spec fields flattened, summary numbers; paged by cursor.
    monkeypatch.setattr(lab_module, "PAGE_SIZE", 1)
    other = client.submit({**TINY, "seed": 7})
    frame = client.runs(tag="client-test")
    assert set(frame["id"]) >= {run.id, other.id}
    row = frame.set_index("id").loc[run.id]
    assert row["spec.algorithm.name"] == "fedavg"
    assert row["summary.final_acc"] == pytest.approx(run.summary["final_acc"])  # type: ignore[index]
    assert list(client.runs(where="seed=7")["id"]) == [other.id]

    # compare: long form
    other.wait(timeout=300)
    long = client.compare([run.id, other.id], metrics=["test_acc"])
    assert set(long.columns) >= {"run", "round", "metric", "value"}
    assert set(long["run"]) == {run.id, other.id}
    assert set(long["metric"]) == {"test_acc"}

    # cancel a queued run, then delete it
    slow = client.submit({**TINY, "rounds": 200, "seed": 9})
    slow.cancel()
    assert slow.wait(timeout=300).status == "cancelled"
    slow.delete()
    with pytest.raises(fedgen_lab.LabNotFound):
        client.run(slow.id)


def test_a_sweep_summary_plot_and_difference(lab: LiveLab) -> None:
    client = fedgen_lab.connect(lab.url, lab.token)
    base = {**TINY, "rounds": 2, "algorithm": {"name": "fedgen"}}
    sweep = client.sweep(
        "client-sweep",
        base,
        {"algorithm.name": ["fedgen", "fedavg"], "partition.alpha": [0.5, 1.0]},
    )
    sweep.wait(timeout=500)
    assert sweep.state.status_counts.get("succeeded") == 4

    summary = sweep.summary(group_by=["algorithm.name"])
    assert sorted(summary["field.algorithm.name"]) == ["fedavg", "fedgen"]
    assert set(summary["n"]) == {2}
    only_final = sweep.summary(statistic="final")
    assert "final_mean" in only_final
    assert "top5_mean" not in only_final

    plot = sweep.plot_data(x="partition.alpha", by="algorithm", statistic="final")
    assert set(plot["by"]) == {"fedavg", "fedgen"}
    assert set(plot["x"]) == {0.5, 1.0}

    runs = sweep.runs()
    a = list(runs[runs["spec.algorithm.name"] == "fedgen"]["id"])
    b = list(runs[runs["spec.algorithm.name"] == "fedavg"]["id"])
    diff = client.difference(a, b, statistic="final")
    assert (diff.n_a, diff.n_b) == (2, 2)

    generator = client.run(a[0]).generator()
    assert generator.cfg.num_classes > 0


def test_errors_carry_the_fields(lab: LiveLab) -> None:
    client = fedgen_lab.connect(lab.url, lab.token)
    with pytest.raises(fedgen_lab.LabValidationError) as caught:
        client.submit({**TINY, "partition": {"num_users": 3, "alpha": -1}})
    assert "partition.alpha" in caught.value.fields
    with pytest.raises(fedgen_lab.LabAuthError):
        fedgen_lab.connect(lab.url, "not-a-token").runs()


def test_spec_file(lab: LiveLab, tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({**TINY, "rounds": 1}))
    run = fedgen_lab.connect(lab.url, lab.token).submit(path)
    assert run.rounds == 1
    run.cancel()


FEDGEN = [sys.executable, "-c", "import sys; from fedgen.cli import main; sys.exit(main())"]


def _fedgen(lab: LiveLab, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FEDGEN, *args],
        env=lab.cli_env(),
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )


def test_fedgen_submit_follow_runs_cancel(lab: LiveLab, tmp_path: Path) -> None:
    import yaml

    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({**TINY, "rounds": 2}))
    done = _fedgen(lab, "submit", str(good), "--follow", "--tag", "cli", "--note", "from cli")
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.splitlines()[0]
    assert "round 2/2" in done.stderr  # the progress bar
    state = fedgen_lab.connect(lab.url, lab.token).run(run_id).state
    assert state.tags == ["client-test", "cli"]
    assert state.note == "from cli"

    # A spec that validates but whose data is not there: the run fails, with its error.
    bad = tmp_path / "bad.yaml"
    folder = {"path": "no-such-folder-41", "classes": 2, "channels": 1, "image_size": 8}
    bad.write_text(yaml.safe_dump({**TINY, "data": {"name": "folder", "folder": folder}}))
    failed = _fedgen(lab, "submit", str(bad), "--follow")
    assert failed.returncode == 1, failed.stderr
    assert "failed" in failed.stderr

    rejected = _fedgen(lab, "submit", str(good), "--note", "x" * 10_001)
    assert rejected.returncode == 2
    assert "note" in rejected.stderr

    table = _fedgen(lab, "runs", "--status", "succeeded", "--limit", "3")
    assert table.returncode == 0, table.stderr
    assert run_id[:8] in table.stdout
    # The lab checks the status word (the command knows no list of its own): exit 2, the field.
    unknown = _fedgen(lab, "runs", "--status", "finished")
    assert unknown.returncode == 2
    assert "status" in unknown.stderr

    long = tmp_path / "long.yaml"
    long.write_text(yaml.safe_dump({**TINY, "rounds": 300}))
    queued = _fedgen(lab, "submit", str(long))
    queued_id = queued.stdout.splitlines()[0]
    cancelled = _fedgen(lab, "cancel", queued_id)
    assert cancelled.returncode == 0, cancelled.stderr
    followed = _fedgen(lab, "follow", queued_id)
    assert followed.returncode == 1  # it ended cancelled
    assert "cancelled" in followed.stderr


def test_pull_then_resume_continues_as_the_lab_would(lab: LiveLab, tmp_path: Path) -> None:
    import json

    client = fedgen_lab.connect(lab.url, lab.token)
    short = client.submit({**TINY, "algorithm": {"name": "fedgen"}, "seed": 11})
    longer = client.submit({**TINY, "algorithm": {"name": "fedgen"}, "seed": 11, "rounds": 8})
    short.wait(timeout=300, check=True)
    longer.wait(timeout=300, check=True)

    out = tmp_path / "pulled"
    pulled = _fedgen(lab, "pull", short.id, "--out", str(out))
    assert pulled.returncode == 0, pulled.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "checkpoints",
        "info.json",
        "metrics.jsonl",
        "spec.json",
        "summary.json",
    ]
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        "full-00003.pt",
        "generator-00003.pt",
        "model-00003.pt",
    ]
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [line["round"] for line in lines] == [0, 1, 2, 3]
    assert len(lines[1]["users"]) == 3
    assert json.loads((out / "summary.json").read_text()) == short.summary
    assert _fedgen(lab, "pull", short.id, "--out", str(out)).returncode == 1  # not over a run

    # Same CPU kind and threads as the worker's slot: the continuation is the lab's, bit for bit.
    threads = str(short.state.versions.get("torch_threads", "1"))
    resumed = _fedgen(lab, "resume", str(out), "--rounds", "8", "--threads", threads)
    assert resumed.returncode == 0, resumed.stderr
    local = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [line["round"] for line in local] == list(range(9))
    lab_curve = longer.metrics()
    assert [line["metrics"]["test_acc"] for line in local] == list(lab_curve["test_acc"])
    lab_users = longer.users()
    last = lab_users[lab_users["round"] == 8].sort_values("user")
    assert [u["test_acc"] for u in local[8]["users"]] == pytest.approx(list(last["test_acc"]))


def test_push_a_local_run(lab: LiveLab, tmp_path: Path) -> None:
    import json

    import yaml

    spec = tmp_path / "local.yaml"
    spec.write_text(yaml.safe_dump({**TINY, "seed": 21}))
    folder = tmp_path / "local"
    made = _fedgen(lab, "run", str(spec), "--out", str(folder), "--threads", "1")
    assert made.returncode == 0, made.stderr

    pushed = _fedgen(lab, "push", str(folder), "--tag", "laptop")
    assert pushed.returncode == 0, pushed.stderr
    run_id = pushed.stdout.splitlines()[0]
    client = fedgen_lab.connect(lab.url, lab.token)
    run = client.run(run_id)
    assert run.status == "succeeded"
    assert run.state.versions["origin"] == "pushed"
    assert run.state.versions["host"]
    summary = json.loads((folder / "summary.json").read_text())
    assert run.summary == {k: None if v != v else v for k, v in summary.items()}  # NaN: null
    assert "laptop" in run.state.tags
    assert list(client.runs(tag="laptop")["id"]) == [run_id]
    local = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    assert list(run.metrics()["test_acc"]) == [line["metrics"]["test_acc"] for line in local]
    assert run.model() is not None  # the final model came along

    # Compare draws it beside a lab run.
    lab_run = client.submit({**TINY, "seed": 21}).wait(timeout=300, check=True)
    long = client.compare([run_id, lab_run.id], metrics=["test_acc"])
    assert set(long["run"]) == {run_id, lab_run.id}

    again = _fedgen(lab, "push", str(folder))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == run_id
    assert "already pushed" in again.stdout
    assert len(client.runs(where="seed=21", q="laptop")) == 1

    forged = tmp_path / "forged"
    forged.mkdir()
    for name in ("spec.json", "info.json", "metrics.jsonl"):
        (forged / name).write_text((folder / name).read_text())
    (forged / "checkpoints").mkdir()
    for ck in (folder / "checkpoints").iterdir():
        (forged / "checkpoints" / ck.name).write_bytes(ck.read_bytes())
    (forged / "summary.json").write_text(json.dumps({**summary, "final_acc": 0.99}))
    refused = _fedgen(lab, "push", str(forged))
    assert refused.returncode == 2
    assert "summary.final_acc" in refused.stderr

    (forged / "summary.json").unlink()
    incomplete = _fedgen(lab, "push", str(forged))
    assert incomplete.returncode == 1
    assert "summary.json" in incomplete.stderr
