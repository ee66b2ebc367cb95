"""The `fedgen` command: run, resume, partition, validate, as a user types them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from fedgen.cli import main

pytestmark = pytest.mark.slow  # `fedgen run` and `fedgen sweep`: real training

TINY = {
    "data": {"name": "synthetic", "synthetic_samples": 600, "synthetic_classes": 4},
    "partition": {"num_users": 4, "alpha": 1.0},
    "users_per_round": 2,
    "rounds": 4,
    "local_steps": 3,
    "batch_size": 16,
    "checkpoint_every": 2,
}


def _write(tmp_path: Path, data: object, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _rounds(out: Path) -> list[int]:
    return [json.loads(line)["round"] for line in (out / "metrics.jsonl").read_text().splitlines()]


SUMMARY = re.compile(
    r"^final (?P<final>\d+\.\d\d)% @(?P<final_round>\d+)"
    r" · best (?P<best>\d+\.\d\d)%(?: @(?P<best_round>\d+))?"
    r" · top-5 (?P<top5>\d+\.\d\d) ± (?P<top5_std>\d+\.\d\d)%"
    r" · (?P<rounds>\d+) rounds · running time \d+\.\d s$"
)


def test_run_writes_metrics_checkpoints_and_summary(tmp_path, capsys) -> None:
    """`fedgen run SPEC --out DIR` writes one JSON line per round and ends with a readable
    summary in %: final (of round R-1 under the default official protocol, so '@3') and best
    with their rounds, the official top-5, and the rounds and time."""
    out = tmp_path / "run"
    assert main(["run", str(_write(tmp_path, TINY)), "--out", str(out)]) == 0
    assert _rounds(out) == [0, 1, 2, 3, 4]
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        "full-00002.pt",
        "full-00004.pt",
        "model-00004.pt",
    ]
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert lines[-1] == f"results: {out}"
    m = SUMMARY.match(lines[-2])
    assert m is not None, lines[-2]
    saved = json.loads((out / "summary.json").read_text())
    assert saved["status"] == "completed"
    assert m["final"] == f"{100 * saved['final_acc']:.2f}"
    assert int(m["final_round"]) == saved["final_round"] == 3
    assert m["best"] == f"{100 * saved['best_acc']:.2f}"
    assert int(m["best_round"]) == saved["best_round"]  # never round 4: it is not evaluated
    assert m["top5"] == f"{100 * saved['top5_mean']:.2f}"
    assert m["rounds"] == "4"
    # The bar's last round (4) is shown, and said not to count, naming final's round.
    last = [x for x in captured.err.splitlines() if "round 4/4" in x][-1]
    assert "not counted" in last
    assert "final is @3" in last
    acc4 = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])["metrics"]["test_acc"]
    assert f"test acc {100 * acc4:.2f}%" in last


def test_after_aggregation_final_is_the_last_round_unnamed(tmp_path, capsys) -> None:
    """Under eval_timing after_aggregation round R is evaluated: final has no '@'."""
    spec = {**TINY, "rounds": 1, "fidelity": {"eval_timing": "after_aggregation"}}
    assert main(["run", str(_write(tmp_path, spec)), "--out", str(tmp_path / "o")]) == 0
    captured = capsys.readouterr()
    summary = captured.out.strip().splitlines()[-2]
    assert re.match(r"^final \d+\.\d\d% · best ", summary), summary
    assert "not counted" not in captured.err


def test_rounds_overrides_the_spec_and_json_keeps_its_line(tmp_path, capsys) -> None:
    """--rounds N replaces the spec's rounds (spec.json records N); --json prints the summary
    as one JSON object (fractions), as before; an existing folder without a run is used."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "README").write_text("x")
    spec = str(_write(tmp_path, TINY))
    assert main(["run", spec, "--out", str(out), "--rounds", "2", "--json"]) == 0
    assert _rounds(out) == [0, 1, 2]
    assert json.loads((out / "spec.json").read_text())["rounds"] == 2
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["out"] == str(out)
    assert summary["rounds_done"] == 2
    assert summary["final_round"] == 1
    assert 0.0 <= summary["final_acc"] <= 1.0


@pytest.mark.parametrize(
    ("value", "limit"),
    [("0", "greater than or equal to 1"), ("10001", "less than or equal to 10000")],
)
def test_rounds_out_of_range_is_a_clear_error(tmp_path, capsys, value, limit) -> None:
    """A bad --rounds exits 2 naming rounds and its limit; nothing is written."""
    out = tmp_path / "run"
    assert main(["run", str(_write(tmp_path, TINY)), "--out", str(out), "--rounds", value]) == 2
    err = capsys.readouterr().err
    assert f"with --rounds {value}" in err
    assert f"rounds: Input should be {limit} (got {value})" in err
    assert not out.exists()


def test_rounds_not_an_integer_is_a_usage_error(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", str(_write(tmp_path, TINY)), "--rounds", "many"])
    assert exc.value.code == 2
    assert "--rounds: rounds must be an integer, got 'many'" in capsys.readouterr().err


def test_rounds_applies_to_a_sweep_base(tmp_path) -> None:
    """In a sweep, --rounds replaces the base's rounds (every run); a grid over rounds clashes."""
    sweep = {"name": "s", "base": TINY, "grid": {"seed": [0, 1]}}
    out = tmp_path / "sw"
    assert main(["run", str(_write(tmp_path, sweep)), "--out", str(out), "--rounds", "1"]) == 0
    assert [_rounds(d) for d in sorted(out.iterdir())] == [[0, 1], [0, 1]]
    clash = {"name": "s", "base": TINY, "grid": {"rounds": [1, 2]}}
    path = _write(tmp_path, clash, "clash.yaml")
    assert main(["run", str(path), "--out", str(tmp_path / "c"), "--rounds", "1"]) == 2


def test_out_refuses_an_existing_run_folder_unless_force(tmp_path, capsys) -> None:
    """A second run into the same --out is refused (exit 2, nothing touched); --force deletes
    the old run's files and runs afresh, keeping the folder's other files."""
    out = tmp_path / "run"
    spec = _write(tmp_path, {**TINY, "rounds": 2, "checkpoint_every": 1})
    assert main(["run", str(spec), "--out", str(out)]) == 0
    (out / "notes.txt").write_text("mine")
    before = (out / "metrics.jsonl").read_text()
    capsys.readouterr()
    assert main(["run", str(spec), "--out", str(out), "--rounds", "1"]) == 2
    err = capsys.readouterr().err
    assert f"--out: {out} already holds a finished run" in err
    assert "--force" in err
    assert (out / "metrics.jsonl").read_text() == before
    assert main(["run", str(spec), "--out", str(out), "--rounds", "1", "--force"]) == 0
    assert _rounds(out) == [0, 1]
    # The old run's checkpoints of round 2 are gone with it; the user's file is kept.
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        "full-00001.pt",
        "model-00001.pt",
    ]
    assert (out / "notes.txt").read_text() == "mine"


def test_an_unfinished_run_folder_points_to_resume(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.jsonl").write_text("")
    assert main(["run", str(_write(tmp_path, TINY)), "--out", str(out)]) == 2
    assert f"fedgen resume {out}" in capsys.readouterr().err


def test_resume_continues_without_duplicating_rounds(tmp_path) -> None:
    """`fedgen resume DIR` continues from the last full checkpoint; rounds are not repeated."""
    out = tmp_path / "run"
    main(["run", str(_write(tmp_path, TINY)), "--out", str(out)])
    whole = (out / "metrics.jsonl").read_text().splitlines()
    (out / "checkpoints" / "full-00004.pt").unlink()  # pretend the run died after round 3
    assert main(["resume", str(out)]) == 0
    again = (out / "metrics.jsonl").read_text().splitlines()
    assert _rounds(out) == [0, 1, 2, 3, 4]

    def strip(line: str) -> dict[str, float]:
        return {k: v for k, v in json.loads(line)["metrics"].items() if not k.startswith("time_")}

    assert [strip(x) for x in again] == [strip(x) for x in whole]


def test_sweep_file_runs_every_combination(tmp_path, capsys) -> None:
    """A file with base + grid runs each expanded spec into its own folder."""
    sweep = {"name": "s", "base": {**TINY, "rounds": 1}, "grid": {"seed": [0, 1]}}
    assert main(["run", str(_write(tmp_path, sweep)), "--out", str(tmp_path / "sw")]) == 0
    assert len(list((tmp_path / "sw").iterdir())) == 2
    assert "results:" in capsys.readouterr().out


def test_validate_prints_spec_or_errors(tmp_path, capsys) -> None:
    """validate prints the full spec, or exits 2 with field errors."""
    assert main(["validate", str(_write(tmp_path, TINY))]) == 0
    assert "spec_hash" in capsys.readouterr().out
    bad = _write(tmp_path, {**TINY, "batch_size": 10**9, "colour": "red"}, "bad.yaml")
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "batch_size" in err
    assert "4096" in err
    assert "colour: unknown field" in err


def test_partition_prints_histogram(tmp_path, capsys) -> None:
    """partition prints one row per user and the fingerprint."""
    assert main(["partition", str(_write(tmp_path, TINY))]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[0] == "user"
    assert len(out) == 1 + 4 + 1 + 1
    assert out[-1].startswith("fingerprint ")


def test_missing_data_is_a_clear_error(tmp_path, capsys) -> None:
    """A dataset that is not there gives one message naming the folder, not a traceback."""
    spec = {**TINY, "data": {"name": "mnist", "root": str(tmp_path / "nowhere")}}
    assert main(["run", str(_write(tmp_path, spec)), "--out", str(tmp_path / "o")]) == 1
    assert "nowhere" in capsys.readouterr().err


def test_readable_summary_names_rounds_only_when_not_the_last() -> None:
    """The end line in %: '@R' is never written, other rounds are; a stopped run says so."""
    from fedgen.cli import readable_summary
    from fedgen.events import RunSummary

    done = RunSummary(
        status="completed",
        rounds_done=30,
        final_acc=0.7042,
        best_acc=0.7102,
        top5_mean=0.7061,
        top5_std=0.0035,
        statistic="top5",
        value=0.7061,
        wall_s=41.23,
        final_round=30,
        best_round=27,
    )
    assert readable_summary(done, 30) == (
        "final 70.42% · best 71.02% @27 · top-5 70.61 ± 0.35% · 30 rounds · running time 41.2 s"
    )
    nan = float("nan")
    stopped = RunSummary("stopped", 0, nan, nan, nan, nan, "top5", nan, 0.5)
    assert readable_summary(stopped, 30) == (
        "final – · best – · top-5 – · stopped after 0 of 30 rounds · running time 0.5 s"
    )


def test_study_run_reports_each_run_in_the_one_format(tmp_path) -> None:
    """`fedgen study run` prints a line per finished run: status, then final/best/top-5 in %."""
    from fedgen.spec import parse_spec
    from fedgen.study_cli import _execute

    spec = parse_spec({**TINY, "rounds": 2})
    [(root, line, _)] = _execute(([(spec.model_dump_json(), str(tmp_path / "r"))], 0))
    saved = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert line.startswith(f"completed · final {100 * saved['final_acc']:.2f}% @1 · best ")
    assert re.search(r" · top-5 \d+\.\d\d ± \d+\.\d\d%$", line)
