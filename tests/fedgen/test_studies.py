"""Studies: sweeps they expand to, cells, the paper's numbers, verdicts, and `fedgen study`."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from fedgen.cli import main
from fedgen.spec import SpecError
from fedgen.stats import pooled_top5, reported_curve
from fedgen.studies import registry
from fedgen.studies.costs import estimate_cpu_s
from fedgen.studies.registry import STUDIES, StudyOverrides, UnknownStudy, plan, study_of_base
from fedgen.studies.verdicts import RunResult, study_table, verdict
from fedgen.sweep import SweepSpec, expand

REQUIRED = {
    "table1",
    "table2",
    "table3",
    "table4",
    "fig5-stragglers",
    "fig5-mlp-vs-cnn",
    "fig5-delay",
}


# Studies beyond the paper: the extended Table 1 of issue 32 (its default is Fashion-MNIST).
EXTENDED = {"table1-extended"}
# On CIFAR-10 with ResNet-18 (only on 32x32 colour images: not in the parametrised checks).
CIFAR = {"cifar10"}
# Tuned by validation (issue 39): a grid per method, so a cell holds several configurations
# (tests/fedgen/test_study_tuned.py).
TUNED = {"table1-tuned"}


def test_every_paper_experiment_is_a_study() -> None:
    """The seven studies exist, each with a version and the paper's dataset as default."""
    assert set(STUDIES) == REQUIRED | EXTENDED | CIFAR | TUNED
    assert {STUDIES[n].paper_dataset for n in REQUIRED} <= {"mnist", "emnist-letters", "celeba"}


@pytest.mark.parametrize("name", sorted(REQUIRED | EXTENDED))
@pytest.mark.parametrize("dataset", [None, "fashion-mnist", "synthetic"])
def test_every_run_falls_in_exactly_one_cell(name: str, dataset: str | None) -> None:
    """Each cell gets one run per seed; every paper number names a cell of the table."""
    # Execute
    p = plan(name, StudyOverrides(dataset=dataset, seeds=2, rounds=5))
    # Assert
    cells = Counter(p.layout.cell_of(s) for s in p.specs)
    assert None not in cells
    assert len(cells) == len(p.layout.rows.labels) * len(p.layout.columns.labels)
    assert set(cells.values()) == {2}
    assert all(s.rounds == 5 for s in p.specs)
    assert {s.seed for s in p.specs} == {0, 1}
    assert set(p.layout.paper) <= set(cells)
    if dataset is not None:
        assert p.layout.paper == {}  # the paper has no Fashion-MNIST or synthetic rows


def test_cifar10_study_runs_resnet18_on_cifar10_with_its_estimate() -> None:
    """Seven algorithms x α 0.1, 0.5 x 3 seeds on CIFAR-10 with ResNet-18, one run per cell and
    seed, crop-flip by the dataset's default, and a CPU estimate that says ResNet-18 costs."""
    p = plan("cifar10")
    assert (p.dataset, p.seeds, p.runs) == ("cifar10", 3, 2 * 7 * 3)
    assert p.layout.rows.labels == ["α=0.1", "α=0.5"]
    assert len(p.layout.columns.labels) == 7
    assert {s.algorithm.name for s in p.specs} == {
        "fedavg",
        "fedprox",
        "scaffold",
        "feddyn",
        "moon",
        "feddf",
        "fedgen",
    }
    cells = Counter(p.layout.cell_of(s) for s in p.specs)
    assert None not in cells
    assert set(cells.values()) == {3}
    assert {s.model.name for s in p.specs} == {"resnet18"}
    assert {s.data.resolved_augment for s in p.specs} == {"crop-flip"}
    fedavg_cnn = plan("table1-extended", StudyOverrides(seeds=1)).specs[0]
    per_run = p.est_cpu_s / p.runs
    assert per_run > 10 * estimate_cpu_s(fedavg_cnn)


def test_table1_default_is_mnist_with_the_papers_numbers() -> None:
    """MNIST: α 0.05/0.1/1 x 7 algorithms x 3 seeds, 200 rounds, every cell with a paper number."""
    # Execute
    p = plan("table1")
    # Assert
    assert (p.dataset, p.runs, p.rounds) == ("mnist", 63, 200)
    assert len(p.layout.paper) == 21
    assert p.layout.paper[("α=1, T=20", "FedDistill+")] == (94.73, 0.15)
    spec = p.specs[0]
    assert (spec.partition.num_users, spec.users_per_round, spec.batch_size) == (20, 10, 32)
    assert spec.partition.sampling_ratio == 0.5
    assert study_of_base(p.sweep.base) == ("table1", 1)


def test_table1_extended_has_both_protocols_and_the_new_baselines() -> None:
    """Fashion-MNIST: (α 0.05/0.1/1 x per-user, global) x 11 algorithms x 3 seeds; each new
    algorithm with its declared hyperparameters; on MNIST the per-user rows carry Table 1's
    numbers of the four paper algorithms and the global rows none."""
    # Execute
    p = plan("table1-extended")
    mnist = plan("table1-extended", StudyOverrides(dataset="mnist", seeds=1))
    # Assert
    assert (p.dataset, p.runs, p.rounds) == ("fashion-mnist", 198, 200)
    assert {s.partition.test_protocol for s in p.specs} == {"per_user", "global"}
    assert {s.partition.alpha for s in p.specs} == {0.05, 0.1, 1.0}
    new = {"scaffold", "feddyn", "moon", "fednova", "fedadam", "fedyogi", "fedavgm"}
    assert {s.algorithm.name for s in p.specs} == {"fedavg", "fedprox", "fedgen", "feddf"} | new
    nova = next(s for s in p.specs if s.algorithm.name == "fednova")
    assert nova.algorithm.model_dump()["local_steps_spread"] == 12
    assert "SCAFFOLD" in p.layout.columns.labels
    assert len(mnist.layout.paper) == 12
    assert all(row.endswith("per-user test") for row, _ in mnist.layout.paper)
    assert mnist.layout.paper[("α=0.1, T=20, per-user test", "FedGen")] == (93.03, 0.32)
    assert study_of_base(p.sweep.base) == ("table1-extended", 1)


def test_table1_emnist_and_celeba_rows_are_the_papers() -> None:
    """EMNIST has 5 rows (T = 40 included) and CelebA r = k/n sets users per round and users."""
    # Execute
    emnist = plan("table1", StudyOverrides(dataset="emnist-letters", seeds=1))
    celeba = plan("table1", StudyOverrides(dataset="celeba", seeds=1))
    # Assert
    assert emnist.layout.rows.labels == [
        "α=0.05, T=20",
        "α=0.1, T=20",
        "α=10, T=20",
        "α=1, T=20",
        "α=1, T=40",
    ]
    assert emnist.layout.paper[("α=1, T=40", "FedGen")] == (78.92, 0.73)
    assert sorted({s.local_steps for s in emnist.specs}) == [20, 40]
    assert {(s.users_per_round, s.partition.num_users) for s in celeba.specs} == {
        (5, 10),
        (5, 25),
        (10, 25),
    }
    assert celeba.layout.paper[("r=5/25, T=20", "FedEnsemble")] == (90.22, 0.31)


def test_table2_and_table3_columns() -> None:
    """Table 2: the generator presets with their EMNIST dims; Table 3: B_G with FedAvg reference."""
    # Execute
    t2 = plan("table2", StudyOverrides(seeds=1))
    t3 = plan("table3", StudyOverrides(seeds=1))
    # Assert
    assert t2.layout.columns.labels == [
        "FedAvg",
        "FedGen cnn0 [64,256]",
        "FedGen default [32,256]",
        "FedGen cnn1 [32,128]",
        "FedGen cnn2 [16,128]",
        "FedGen cnn3 [32,64]",
    ]
    assert t2.layout.paper[("α=0.1, T=20", "FedGen cnn1 [32,128]")] == (72.43, 0.57)
    gen_batch_sizes = [s.algorithm.gen_batch_size for s in t3.specs if s.algorithm.name == "fedgen"]
    assert sorted(gen_batch_sizes) == [8, 16, 32, 64, 128]
    assert t3.layout.reference_row == "FedAvg"


def test_table4_whole_model_cells_come_from_table1() -> None:
    """Sharing the predictor: Table 4's numbers; the whole model: Table 1's MNIST rows (no α=10)."""
    # Execute
    p = plan("table4")
    # Assert
    assert p.layout.paper[("α=0.1, predictor only", "FedGen")] == (65.42, 0.29)
    assert p.layout.paper[("α=0.1, whole model", "FedGen")] == (93.03, 0.32)
    assert ("α=10, whole model", "FedGen") not in p.layout.paper
    assert {s.share for s in p.specs} == {"predictor", "all"}


def test_fig5_studies() -> None:
    """Stragglers vary users per round; the model study uses the two CNNs; delay T = 20 vs 40."""
    # Execute
    strag = plan("fig5-stragglers", StudyOverrides(seeds=1))
    models = plan("fig5-mlp-vs-cnn", StudyOverrides(seeds=1))
    delay = plan("fig5-delay", StudyOverrides(seeds=1))
    # Assert
    assert sorted({s.users_per_round for s in strag.specs}) == [5, 10, 15, 20, 23]
    assert strag.layout.paper[("r=10/25, T=20", "FedGen")] == (90.29, 0.47)
    assert {s.model.name for s in models.specs} == {"official-cnn", "mcmahan-cnn"}
    assert any("no MLP" in n for n in models.study.notes)
    assert {s.local_steps for s in delay.specs} == {20, 40}
    assert delay.layout.paper[("α=1, T=40", "FedAvg")] == (77.02, 1.09)


def test_verdict() -> None:
    """Within the paper's ±, better, worse (for time, lower is better), or why there is none."""
    assert verdict(90.5, (90.16, 0.59)) == "within"
    assert verdict(90.16 - 0.59, (90.16, 0.59)) == "within"
    assert verdict(91.0, (90.16, 0.59)) == "better"
    assert verdict(89.0, (90.16, 0.59)) == "worse"
    assert verdict(1.10, (1.20, 0.05), higher_is_better=False) == "better"
    assert verdict(90.0, None) == "no paper number"
    assert verdict(math.nan, (90.16, 0.59)) == "no runs yet"


def test_study_table_pools_top5_over_seeds() -> None:
    """A cell is the pooled top-5 of its succeeded runs' reported curves; others are ignored."""
    # Prepare
    p = plan("table1", StudyOverrides(seeds=2, rounds=8))
    results = []
    curves = []
    for s in p.specs:
        if p.layout.cell_of(s) != ("α=0.05, T=20", "FedAvg"):
            continue
        curve = [0.5 + 0.05 * r + 0.01 * s.seed for r in range(9)]
        curves.append([100 * a for a in reported_curve(curve, "before_training")])
        results.append(RunResult(s, True, curve))
    failed = next(s for s in p.specs if p.layout.cell_of(s) == ("α=0.1, T=20", "FedGen"))
    results.append(RunResult(failed, False, [0.9] * 3))
    # Execute
    table = study_table("table1", "mnist", results)
    # Assert
    cells = {(c.row, c.column): c for c in table.cells}
    cell = cells[("α=0.05, T=20", "FedAvg")]
    assert (cell.mean, cell.std) == pytest.approx(pooled_top5(curves))
    assert cell.n == 2
    assert cell.verdict == "worse"  # about 76 vs the paper's 87.70 ± 2.07
    assert cell.delta == pytest.approx(cell.mean - 87.70)
    assert cells[("α=0.1, T=20", "FedGen")].verdict == "no runs yet"
    assert cells[("α=0.1, T=20", "FedGen")].runs == 1
    assert (table.runs_total, table.runs_done) == (3, 2)


def test_table3_cell_counts_finished_runs_only() -> None:
    """A failed run's per-update times stay out of the Table 3 mean and its n."""
    # Prepare
    p = plan("table3", StudyOverrides(seeds=2, rounds=4))
    fedavg = [s for s in p.specs if s.algorithm.name == "fedavg"]
    results = [
        RunResult(fedavg[0], True, user_ms=[10.0, 12.0]),
        RunResult(fedavg[1], False, user_ms=[500.0, 500.0]),
    ]
    # Execute
    table = study_table("table3", p.dataset, results)
    # Assert
    (cell,) = [c for c in table.cells if c.row == "FedAvg"]
    assert cell.mean == pytest.approx(11.0)
    assert cell.n == 1
    assert cell.runs == 2


def test_bad_overrides_and_unknown_names() -> None:
    """Overrides are validated with the field named; an unknown study names the known ones."""
    with pytest.raises(ValueError, match="seeds"):
        StudyOverrides(seeds=0)
    with pytest.raises(ValueError, match="dataset"):
        StudyOverrides(dataset="imagenet")
    with pytest.raises(UnknownStudy, match="table1, table1-extended, table1-tuned, table2"):
        plan("table9")


def test_zipped_grid_keys() -> None:
    """A key "a,b" sets both fields together: settings without the full cartesian product."""
    # Prepare
    sweep = SweepSpec(
        base={"data": {"name": "synthetic"}},
        grid={"partition.alpha,local_steps": [[0.1, 20], [1.0, 40]], "seed": [0, 1]},
    )
    # Execute
    specs = expand(sweep)
    # Assert
    assert [(s.partition.alpha, s.local_steps, s.seed) for s in specs] == [
        (0.1, 20, 0),
        (0.1, 20, 1),
        (1.0, 40, 0),
        (1.0, 40, 1),
    ]
    with pytest.raises(
        ValueError, match=r"grid.partition.alpha,local_steps\[1\]: expected a list of 2"
    ):
        SweepSpec(grid={"partition.alpha,local_steps": [[0.1, 20], [1.0]]})
    with pytest.raises(SpecError, match="local_steps"):
        expand(SweepSpec(grid={"partition.alpha,local_steps": [[0.1, 0]]}))


def test_studies_import_no_torch() -> None:
    """The API and the dashboard import the studies without torch."""
    modules = "fedgen.studies.costs, fedgen.studies.layouts, fedgen.studies.registry, "
    modules += "fedgen.studies.verdicts, fedgen.paper"
    code = f"import sys, {modules}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cli_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    """`fedgen study list` names every study with runs and CPU time; `show` prints the sweep."""
    assert main(["study", "list"]) == 0
    out = capsys.readouterr().out
    for name in REQUIRED:
        assert name in out
    assert "table1           mnist            63" in out
    assert main(["study", "show", "table4"]) == 0
    shown = capsys.readouterr().out
    assert "partition.alpha,share" in shown
    assert "63.60 ± 0.63" in shown
    assert main(["study", "show", "table9"]) == 2
    assert "known studies: table1" in capsys.readouterr().err
    assert main(["study", "show", "table1", "--seeds", "0"]) == 2
    assert "seeds" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_run_tiny_study(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fedgen study run` runs the sweep, prints the table, and keeps finished runs on a rerun."""
    # Prepare: the plumbing is under test, so the paper's setting is made tiny.
    small = {**registry.PAPER_SETTING, "users_per_round": 2, "local_steps": 2}
    monkeypatch.setattr(registry, "PAPER_SETTING", small)  # where `plan` reads it
    monkeypatch.setitem(registry.DATASET_FIELDS, "synthetic", {"synthetic_samples": 5000})
    # Execute
    argv = ["study", "run", "table3", "--dataset", "synthetic", "--seeds", "1", "--rounds", "2"]
    code = main([*argv, "--out", str(tmp_path)])
    out = capsys.readouterr()
    # Assert
    assert code == 0
    assert "6/6 runs done" in out.out
    assert "| FedGen B_G=128 | α=0.1, T=20 |" in out.out
    table = json.loads((tmp_path / "study.json").read_text())
    assert [c["n"] for c in table["cells"]] == [1] * 6
    assert {c["verdict"] for c in table["cells"]} == {"reference", "no paper number"}
    assert main([*argv, "--out", str(tmp_path)]) == 0
    assert "(6 already done" in capsys.readouterr().err


def test_table2_description_is_built_from_its_columns() -> None:
    """Table 2's text names the column labels of the dataset it is shown for (the presets'
    [d_ε, d_h] differ between the EMNIST and MNIST families), never another dataset's."""
    # Prepare
    study = registry.get_study("table2")
    # Execute
    texts = {
        d: plan(study, StudyOverrides(dataset=d, seeds=1)).to_dict()
        for d in ("emnist-letters", "fashion-mnist")
    }
    # Assert
    for dataset, body in texts.items():
        columns = ", ".join(body["columns"])
        assert body["reproduces"].endswith(f"On {dataset} the columns are: {columns}.")
    assert "cnn3 [32,64]" in texts["emnist-letters"]["reproduces"]
    assert "cnn3 [16,64]" in texts["fashion-mnist"]["reproduces"]
    assert study.describe() == texts["emnist-letters"]["reproduces"]
