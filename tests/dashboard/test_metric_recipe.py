"""The "How to add a metric" recipe (docs/architecture.md) names the files a Live/Compare metric
touches, and the pages read every metric from the one declaration (fedgen.metric_names).

Fails when the recipe's list no longer matches: its first file must hold the declaration, the
others must be exactly the modules that write the declared metrics into `RoundEvent.metrics`;
and every declared metric must reach its Live chart and the Compare list through the
declaration alone (the pages themselves are checked in test_pages.py and
test_compare_page.py).
"""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path

import pandas as pd

from dashboard import live_view
from dashboard.compare_page import compare_view
from fedgen import metric_names

ROOT = Path(__file__).resolve().parents[2]
ALGORITHM_MODULE = re.compile(r"^fedgen/algorithms/\w+\.py$")


def _recipe_files() -> list[str]:
    """The .py files the recipe's round-metric bullets name, in order."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## How to add a metric", 1)[1].split("\n## ", 1)[0]
    bullets = section.split("- A per-user metric", 1)[0].split("\n- ")[1:]
    return [f for b in bullets for f in re.findall(r"`([\w/<>.]+\.py)`", b)]


def _metric_keys_written(tree: ast.AST) -> set[str]:
    """Declared metric keys a module writes: dict keys, `d["key"] = ...`, `dict(key=...)`."""
    keys: list[object] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys += [k.value for k in node.keys if isinstance(k, ast.Constant)]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            keys += [node.slice.value] if isinstance(node.slice, ast.Constant) else []
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dict":
            keys += [k.arg for k in node.keywords]
    return {k for k in keys if isinstance(k, str) and k in metric_names.METRICS}


def _writers() -> dict[str, set[str]]:
    """Module (as the recipe writes it: an algorithm is `fedgen/algorithms/<name>.py`) -> the
    declared metrics it writes; the declaration itself left out."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / "fedgen").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "fedgen/metric_names.py":
            continue
        written = _metric_keys_written(ast.parse(path.read_text(encoding="utf-8")))
        if written:
            name = "fedgen/algorithms/<name>.py" if ALGORITHM_MODULE.match(rel) else rel
            out.setdefault(name, set()).update(written)
    return out


def test_the_recipe_names_the_declaration_and_the_modules_that_compute_metrics() -> None:
    """First the declaration's module; then exactly the modules that write declared metrics."""
    # Prepare
    declaration = Path(metric_names.__file__).resolve().relative_to(ROOT).as_posix()
    writers = _writers()
    # Execute
    files = _recipe_files()
    # Assert
    assert files[0] == declaration, files
    assert sorted(files[1:]) == sorted(writers), (files, writers)
    assert set().union(*writers.values()) == set(metric_names.METRICS)  # none declared unwritten


def test_every_declared_chart_metric_is_drawn_on_its_live_chart() -> None:
    """A frame with every declared metric: each one with a `chart` is a named line (or bar)
    of that Live chart, accuracies in %; each chart is declared once."""
    # Prepare
    keys = list(metric_names.METRICS)
    df = pd.DataFrame({"round": [0, 1], **{k: [0.5, 1.0] for k in keys}})
    charted = [m for m in metric_names.METRICS.values() if m.chart]
    # Execute
    figures = {c: live_view.live_chart(df, c, "t") for c in live_view.CHARTS}
    # Assert
    assert len(live_view.CHARTS) == len(metric_names.LIVE_CHARTS)
    assert {m.chart for m in charted} == set(live_view.CHARTS)  # no chart empty, none unknown
    for m in charted:
        trace = next(t for t in figures[m.chart].data if t.name == m.legend_name)
        scale = live_view.CHARTS[m.chart].scale * (100.0 if m.percent else 1.0)
        assert list(trace.y) == [0.5 * scale, 1.0 * scale], m.key
        assert live_view.has_data(df[["round", m.key]], m.chart)


def test_compare_metrics_and_their_csv_column_come_from_the_declaration() -> None:
    """Compare's list is the declared one; a metric's CSV column says % when it is in %."""
    # Prepare
    long = pd.DataFrame({"run_id": ["a"], "round": [0], "value": [50.0], "wall_s": [1.0]})
    # Execute
    columns = {
        k: pd.read_csv(
            io.StringIO(compare_view.runs_csv(long, {}, metric_names.metric_name(k).csv_column))
        ).columns[3]
        for k in metric_names.COMPARE_METRICS
    }
    # Assert
    assert metric_names.COMPARE_METRICS[0] == "test_acc"  # the page's default
    assert all(metric_names.METRICS[k].compare for k in metric_names.COMPARE_METRICS)
    assert columns["test_acc"] == "test_acc_pct"
    assert columns["test_loss"] == "test_loss"
