"""Study cells' seed std and cost columns, and the tuned Table 1 (issue 39)."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from fedgen.cost import run_cost
from fedgen.spec import parse_spec
from fedgen.stats import pooled_top5, reported_curve, val_best
from fedgen.studies import layouts
from fedgen.studies.registry import STUDIES, StudyOverrides, plan
from fedgen.studies.tuning import GRID_SIZE, TUNING_GRIDS, grid_values
from fedgen.studies.verdicts import RunResult, study_table
from fedgen.study_cli import load_result

CELL = ("α=0.05, T=20", "FedAvg")


def _curve(seed: int, rounds: int = 8) -> list[float]:
    """A curve whose top-5 differ per seed by more than a constant (so the seed std is not 0)."""
    return [0.5 + 0.04 * r + 0.013 * seed * seed + 0.002 * (r % 3) for r in range(rounds + 1)]


def test_seed_std_is_ddof1_over_each_seeds_top5() -> None:
    """A cell's seed_std is numpy's std (ddof 1) of each seed's own top-5 mean; std stays the
    pooled one (the official statistic), and n_seeds counts the seeds."""
    # Prepare
    p = plan("table1", StudyOverrides(seeds=3, rounds=8))
    specs = [s for s in p.specs if p.layout.cell_of(s) == CELL]
    results = [RunResult(s, True, _curve(s.seed)) for s in specs]
    reported = [[100 * a for a in reported_curve(_curve(s.seed), "before_training")] for s in specs]
    per_seed = [float(np.mean(sorted(c, reverse=True)[:5])) for c in reported]
    # Execute
    cell = {(c.row, c.column): c for c in study_table("table1", "mnist", results).cells}[CELL]
    shown = cell.to_dict()
    # Assert
    assert shown["seed_std"] == pytest.approx(float(np.std(per_seed, ddof=1)), abs=1e-4)
    assert (cell.mean, cell.std) == pytest.approx(pooled_top5(reported))
    assert cell.seed_std != pytest.approx(cell.std)  # two different figures
    assert shown["n_seeds"] == 3


def test_seed_std_is_null_under_two_seeds() -> None:
    """One seed has no sample std: seed_std is null, the pooled std is not."""
    # Prepare
    p = plan("table1", StudyOverrides(seeds=1, rounds=8))
    spec = next(s for s in p.specs if p.layout.cell_of(s) == CELL)
    # Execute
    table = study_table("table1", "mnist", [RunResult(spec, True, _curve(0))])
    cell = next(c.to_dict() for c in table.cells if (c.row, c.column) == CELL)
    # Assert
    assert cell["seed_std"] is None
    assert cell["std"] is not None
    assert cell["n_seeds"] == 1


def test_table3_seed_std_is_over_each_seeds_mean_ms() -> None:
    """ms per update: each seed's own figure is the mean of its rounds' ms."""
    # Prepare
    p = plan("table3", StudyOverrides(seeds=3, rounds=4))
    fedavg = [s for s in p.specs if s.algorithm.name == "fedavg"]
    ms = [[10.0, 12.0], [20.0, 21.0, 25.0], [13.0]]
    results = [RunResult(s, True, user_ms=m) for s, m in zip(fedavg, ms, strict=True)]
    # Execute
    table = study_table("table3", p.dataset, results)
    # Assert
    (cell,) = [c for c in table.cells if c.row == "FedAvg"]
    assert cell.seed_std == pytest.approx(float(np.std([np.mean(m) for m in ms], ddof=1)))


def test_cost_columns_are_the_sums_of_the_rounds() -> None:
    """A cell's cost columns: per run the sum of its rounds' bytes and times, mean and seed
    std over the cell's finished runs; a failed run's rounds do not count."""
    # Prepare
    p = plan("table1", StudyOverrides(seeds=3, rounds=3))
    specs = [s for s in p.specs if p.layout.cell_of(s) == CELL]
    rounds = {
        0: {"bytes_up": [math.nan, 1e6, 2e6, 3e6], "bytes_down": [math.nan, 4e6, 4e6, 4e6]},
        1: {"bytes_up": [math.nan, 2e6, 2e6, 2e6], "bytes_down": [math.nan, 5e6, 5e6, 6e6]},
        2: {"bytes_up": [math.nan, 9e9, 9e9, 9e9], "bytes_down": [math.nan, 9e9, 9e9, 9e9]},
    }
    for s in specs:
        rounds[s.seed] |= {"time_train_ms": [math.nan, 100.0 * (s.seed + 1)] * 2}
        rounds[s.seed] |= {"time_server_ms": [math.nan, 7.0, 8.0, 9.0 + s.seed]}
    results = [
        RunResult(s, s.seed != 2, _curve(s.seed, 3), cost=run_cost(rounds[s.seed])) for s in specs
    ]
    # Execute
    cell = next(
        c.to_dict()
        for c in study_table("table1", "mnist", results).cells
        if (c.row, c.column) == CELL
    )
    # Assert
    up = [1 + 2 + 3, 2 + 2 + 2]  # MB of seeds 0 and 1 (seed 2 failed)
    down = [12, 16]
    train = [0.2, 0.4]
    server = [0.024, 0.025]
    for name, values in (
        ("mb_up", up),
        ("mb_down", down),
        ("mb_total", [u + d for u, d in zip(up, down, strict=True)]),
        ("client_train_s", train),
        ("server_s", server),
    ):
        assert cell[f"{name}_mean"] == pytest.approx(float(np.mean(values))), name
        assert cell[f"{name}_seed_std"] == pytest.approx(float(np.std(values, ddof=1))), name


def test_table1_tuned_gives_every_method_a_grid_of_the_same_size() -> None:
    """Every method's grid has GRID_SIZE values, each a valid spec; the sweep expands to
    (3 α x 2 protocols) x 11 methods x GRID_SIZE x 5 seeds, GRID_SIZE x 5 runs a cell; EMNIST's
    five α rows would pass the sweep limit and are refused naming it."""
    # Prepare
    study = STUDIES["table1-tuned"]
    # Execute
    p = plan(study)
    with pytest.raises(ValueError, match="more than the limit 1000"):
        plan(study, StudyOverrides(dataset="emnist-letters"))
    # Assert
    assert {len(values) for _, values in TUNING_GRIDS.values()} == {GRID_SIZE}
    for block, lr in grid_values(tuple(TUNING_GRIDS), dict(layouts.TABLE1_EXTENDED)):
        parse_spec({"algorithm": block, "lr": lr})  # every grid value validates
    assert (study.default_seeds, study.statistic, study.table_std) == (5, "val_best", "seed")
    assert p.runs == 6 * 11 * GRID_SIZE * 5 == 990
    assert p.dataset == "fashion-mnist"
    cells = Counter(p.layout.cell_of(s) for s in p.specs)
    assert None not in cells
    assert set(cells.values()) == {GRID_SIZE * 5}
    per_method = Counter(s.algorithm.name for s in p.specs if s.seed == 0)
    assert set(per_method.values()) == {6 * GRID_SIZE}
    assert set(per_method) == {name for name, _ in layouts.TABLE1_EXTENDED}
    assert {s.partition.val_fraction for s in p.specs} == {0.1}
    assert {(s.partition.num_users, s.users_per_round) for s in p.specs} == {(20, 10)}
    assert p.est_cpu_s > 0


def test_table1_tuned_varies_only_each_methods_own_knob() -> None:
    """FedProx's runs differ only in μ, FedGen's in α₀; FedAvg's and FedNova's in lr, the others
    keep 0.01; the extended table's other parameters stay (FedNova's spread 12)."""
    # Prepare
    p = plan("table1-tuned", StudyOverrides(seeds=1, rounds=3))
    # Execute
    by = {name: [s for s in p.specs if s.algorithm.name == name] for name in ("fedprox", "fedgen")}
    lrs = Counter((s.algorithm.name, s.lr) for s in p.specs)
    # Assert
    assert sorted({s.algorithm.mu for s in by["fedprox"]}) == [0.001, 0.01, 0.1]  # type: ignore[attr-defined]
    assert sorted({s.algorithm.client_teacher_weight for s in by["fedgen"]}) == [1.0, 3.0, 10.0]  # type: ignore[attr-defined]
    assert {lr for (name, lr) in lrs if name == "fedavg"} == {0.003, 0.01, 0.03}
    assert {lr for (name, lr) in lrs if name not in ("fedavg", "fednova")} == {0.01}
    fednova = [s.algorithm for s in p.specs if s.algorithm.name == "fednova"]
    assert {a.local_steps_spread for a in fednova} == {12}  # type: ignore[attr-defined]


def test_tuned_cell_reports_the_configuration_best_on_validation() -> None:
    """A tuned cell reports the runs of the configuration with the best mean validation
    accuracy (not the best test accuracy), with the chosen values and the budget."""
    # Prepare
    p = plan("table1-tuned", StudyOverrides(seeds=2, rounds=4))
    cell = ("α=0.1, T=20, per-user test", "FedProx")
    specs = [s for s in p.specs if p.layout.cell_of(s) == cell]
    # μ 0.01 validates best; μ 0.1 tests best but validates worst.
    val_top = {0.001: 0.6, 0.01: 0.8, 0.1: 0.5}
    test_top = {0.001: 0.6, 0.01: 0.7, 0.1: 0.95}
    results = []
    for s in specs:
        mu = s.algorithm.mu  # type: ignore[attr-defined]
        val = [val_top[mu] - 0.1 * abs(2 - r) + 0.01 * s.seed for r in range(5)]
        acc = [test_top[mu] - 0.05 * abs(3 - r) for r in range(5)]
        results.append(RunResult(s, True, acc, val=val))
    chosen = [r for r in results if r.spec.algorithm.mu == 0.01]  # type: ignore[attr-defined]
    per_seed = [100 * val_best(r.acc, r.val, "before_training")[0] for r in chosen]
    # Execute
    table = study_table("table1-tuned", "fashion-mnist", results)
    got = next(c.to_dict() for c in table.cells if (c.row, c.column) == cell)
    # Assert
    assert got["tuned"] == {"algorithm.mu": 0.01}  # only what its configurations differ in
    assert got["budget"] == GRID_SIZE
    assert got["mean"] == pytest.approx(float(np.mean(per_seed)), abs=1e-4)
    assert got["n"] == 2
    assert got["runs"] == 2 * GRID_SIZE
    assert table.to_dict()["std_kind"] == "seed"


def test_tuned_cell_without_validation_chooses_nothing() -> None:
    """Runs without validation figures: the cell chooses nothing and reports no number."""
    # Prepare
    p = plan("table1-tuned", StudyOverrides(seeds=1, rounds=3))
    cell = ("α=0.1, T=20, per-user test", "FedGen")
    results = [RunResult(s, True, _curve(0, 3)) for s in p.specs if p.layout.cell_of(s) == cell]
    # Execute
    got = next(
        c.to_dict()
        for c in study_table("table1-tuned", "fashion-mnist", results).cells
        if (c.row, c.column) == cell
    )
    # Assert
    assert (got["tuned"], got["mean"], got["n"], got["budget"]) == (None, None, 0, GRID_SIZE)


def test_a_local_run_directory_gives_validation_and_cost(tmp_path: Path) -> None:
    """`fedgen study run` reads a run's val_acc by round (NaN where a round has none) and its
    cost sums from metrics.jsonl, as the lab reads them from its rounds."""
    # Prepare
    spec = plan("table1-tuned", StudyOverrides(seeds=1, rounds=2)).specs[0]
    (tmp_path / "spec.json").write_text(json.dumps(spec.model_dump(mode="json")))
    rounds = [
        {"test_acc": 0.1},
        {"test_acc": 0.5, "val_acc": 0.4, "bytes_up": 2e6, "bytes_down": 3e6},
        {"test_acc": 0.6, "bytes_up": 2e6, "bytes_down": 3e6, "time_train_ms": 500.0},
    ]
    lines = [json.dumps({"round": r, "metrics": m}) for r, m in enumerate(rounds)]
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "summary.json").write_text(json.dumps({"status": "completed"}))
    # Execute
    result = load_result(tmp_path)
    # Assert
    assert result.succeeded
    assert math.isnan(result.val[0])
    assert result.val[1] == 0.4
    assert result.cost is not None
    assert (result.cost["mb_up"], result.cost["mb_total"]) == (4.0, 10.0)
    assert result.cost["client_train_s"] == 0.5


def test_tuned_markdown_names_the_choice_and_no_nan_for_one_seed() -> None:
    """`fedgen study run`'s table: a one-seed cell shows its mean alone (no "± nan"), and a
    tuned cell the values chosen by validation out of its budget."""
    # Prepare: one seed; FedProx's μ 0.01 validates best
    p = plan("table1-tuned", StudyOverrides(seeds=1, rounds=4))
    cell = ("α=0.1, T=20, per-user test", "FedProx")
    results = []
    for s in (s for s in p.specs if p.layout.cell_of(s) == cell):
        mu = s.algorithm.mu  # type: ignore[attr-defined]
        val = [0.5 + (0.2 if mu == 0.01 else 0.0)] * 5
        results.append(RunResult(s, True, [0.6] * 5, val=val))
    # Execute
    text = study_table("table1-tuned", "fashion-mnist", results).markdown()
    # Assert
    line = next(x for x in text.splitlines() if x.startswith(f"| {cell[0]} | FedProx |"))
    assert "nan" not in text
    assert "| 60.00 % | 1/3 |" in line
    assert "algorithm.mu=0.01 (best of 3)" in line
    assert text.splitlines()[0].endswith("| chosen by validation | verdict |")
