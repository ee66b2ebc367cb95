"""The summary statistic is declared once (fedgen.stats): the knob, the API's schemas and
routes, and the lab's queries take its Literal; no other module spells the list again."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from fedgen.knobs import BY_NAME
from fedgen.stats import CURVE_STATISTICS, PlotStatistic, curve_statistic

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("fedgen", "lab", "api", "worker", "dashboard")
# The list as the seven copies spelled it (a study's own "top5" or "ms_per_update" is another
# concept: fedgen.studies.registry).
SPELLED = re.compile(r"""Literal\[\s*["']final["']\s*,\s*["']best["']""")


def test_the_list_is_spelled_only_in_fedgen_stats() -> None:
    """A Literal over the statistics' names appears in fedgen/stats.py only."""
    # Execute
    found = [
        str(path.relative_to(ROOT))
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if SPELLED.search(path.read_text(encoding="utf-8"))
    ]
    # Assert
    assert found == ["fedgen/stats.py"]


def test_knob_and_plot_take_the_declared_statistics() -> None:
    """The fidelity knob offers the curve statistics; the plot adds time to target."""
    # Assert
    assert (
        get_args(BY_NAME["statistic"].type)
        == CURVE_STATISTICS
        == ("final", "best", "top5", "val_best")
    )
    assert get_args(PlotStatistic) == (*CURVE_STATISTICS, "time_to_target")


def test_an_unknown_statistic_names_the_choices() -> None:
    """curve_statistic refuses a name outside the list, listing it."""
    # Execute / Assert
    with pytest.raises(ValueError, match="'median'.*'final', 'best', 'top5'"):
        curve_statistic([0.1, 0.2], "median")  # type: ignore[arg-type]
