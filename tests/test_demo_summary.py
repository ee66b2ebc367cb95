"""The demo's printed lines: the table and each run's result in % with "final" and "best"
as docs/metrics.md defines them, and the quiet filter on its children's output."""

from __future__ import annotations

import io
import subprocess
import sys

from scripts.demo import progress_line, pump, run_result, shown, summary_table


def _run(rid: str, final: float, best: float, best_round: int, rounds: int = 30) -> dict:
    summary = {
        "final_acc": final,
        "final_round": rounds - 1,
        "best_acc": best,
        "best_round": best_round,
        "top5_mean": best - 0.002,
        "top5_std": 0.003,
    }
    return {
        "id": rid,
        "status": "succeeded",
        "rounds": rounds,
        "current_round": rounds,
        "summary": summary,
        "error": None,
    }


def test_summary_table_is_percent_with_final_and_best_rounds() -> None:
    """After 30 rounds under the official protocol final is round 29's: '@29'; best names its
    round (a range when the seeds differ); a group with no finished run shows '–'."""
    runs = {
        "a": _run("a", 0.80, 0.81, 27),
        "b": _run("b", 0.78, 0.80, 29),
        "c": _run("c", 0.70, 0.72, 30),
    }
    keys = ("label", "n", "final_mean", "final_std", "final_round", "top5_mean", "top5_std")
    rows = [
        ("algorithm.name=fedgen", 2, 0.79, 0.01, 29, 0.8123, 0.004, ["a", "b"]),
        ("algorithm.name=fedavg", 0, None, None, None, None, None, []),
        ("algorithm.name=fedprox", 1, 0.7, 0.0, 30, 0.71, 0.0, ["c"]),
    ]
    groups = [dict(zip((*keys, "run_ids"), row, strict=True)) for row in rows]
    lines = summary_table(groups, runs).splitlines()
    assert "mean ± std" in lines[0]
    assert "docs/metrics.md" in lines[0]
    assert lines[1].split() == ["group", "n", "final", "best", "top-5"]
    fedgen = next(line for line in lines if "fedgen" in line)
    assert "79.00 ± 1.00% @29" in fedgen
    assert "80.50 ± 0.50% @27–29" in fedgen
    assert "81.23 ± 0.40%" in fedgen
    assert "(29)" not in fedgen
    fedavg = next(line for line in lines if "fedavg" in line)
    assert fedavg.split()[1:] == ["0", "–", "–", "–"]
    # after_aggregation: final and best of the last round (30 of 30) are not named.
    fedprox = next(line for line in lines if "fedprox" in line)
    assert "70.00 ± 0.00%  " in fedprox
    assert "@" not in fedprox


def test_run_result_is_the_one_format_or_the_failure() -> None:
    assert run_result(_run("a", 0.7042, 0.7102, 27)) == (
        "final 70.42% @29 · best 71.02% @27 · top-5 70.82 ± 0.30%"
    )
    failed = {
        "status": "failed",
        "rounds": 30,
        "current_round": 4,
        "summary": None,
        "error": "mnist: dataset files not found",
    }
    assert run_result(failed) == "failed in round 5 of 30: mnist: dataset files not found"


def test_progress_line_counts_runs_and_rounds() -> None:
    runs = [
        {"status": "running", "current_round": 12, "rounds": 30},
        {"status": "queued", "current_round": -1, "rounds": 30},
        {"status": "succeeded", "current_round": 30, "rounds": 30},
    ]
    assert progress_line(runs) == "  running: 1 · queued: 1 · done: 1 · rounds 42/90"


CHILD_LINES = [
    "[up] started api (pid 101): /w/.venv/bin/uvicorn api.main:create_app --factory",
    "[up] started worker (pid 102): /w/.venv/bin/fedgen-lab worker --embedded --quiet",
    "[up] API http://127.0.0.1:8000/api/v1  docs http://127.0.0.1:8000/docs",
    "  You can now view your Streamlit app in your browser.",
    "  URL: http://127.0.0.1:8501",
    'INFO:     127.0.0.1:50000 - "GET /api/v1/ready HTTP/1.1" 200 OK',
    "worker: Warm shutdown (MainProcess)",
    "[up] worker exited with -9 (SIGKILL); restarting in 1 s (restart 1)",
    "[up] stopping all processes",
    "[worker] started slot0 (pid 103): /w/.venv/bin/python -m worker --slots 1",
    "[worker] slot1 exited with 1; restarting in 2 s (restart 2)",
    "[worker] stopping all processes",
    "Traceback (most recent call last):",
]


def test_only_a_dead_or_unstartable_child_is_shown() -> None:
    shown_lines = [x for x in map(shown, CHILD_LINES) if x is not None]
    assert shown_lines == [
        "  ! lab: worker exited with -9 (SIGKILL); restarting in 1 s (restart 1)",
        "  ! lab: worker slot1 exited with 1; restarting in 2 s (restart 2)",
    ]
    assert shown("[up] dashboard could not start ([Errno 12]); retrying in 2 s") == (
        "  ! lab: dashboard could not start ([Errno 12]); retrying in 2 s"
    )


def test_pump_logs_every_child_line_and_echoes_only_alerts() -> None:
    """A real child's stdout through the pipe: all of it in the log, the terminal quiet."""
    code = "import sys; sys.stdout.write(sys.argv[1])"
    child = subprocess.Popen(
        [sys.executable, "-c", code, "\n".join(CHILD_LINES) + "\n"], stdout=subprocess.PIPE
    )
    log, echo = io.StringIO(), io.StringIO()
    assert child.stdout is not None
    pump(child.stdout, log, echo)
    child.wait()
    assert log.getvalue().splitlines() == CHILD_LINES
    assert echo.getvalue() == (
        "  ! lab: worker exited with -9 (SIGKILL); restarting in 1 s (restart 1)\n"
        "  ! lab: worker slot1 exited with 1; restarting in 2 s (restart 2)\n"
    )
    assert "Streamlit" not in echo.getvalue()
    assert "Warm shutdown" not in echo.getvalue()
