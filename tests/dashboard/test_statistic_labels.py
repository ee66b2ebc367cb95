"""The dashboard names each summary statistic by fedgen.stats.STATISTIC_LABELS: the Sweep
tables page offers the curve statistics, its plot every statistic (a page module imports
without running: its page is `render()`)."""

from __future__ import annotations

from typing import get_args

from dashboard.app_pages.paper_tables import STATISTICS as TABLES
from dashboard.paper_tables_page.sweep_plot import STATISTICS as PLOT
from fedgen.stats import CURVE_STATISTICS, STATISTIC_LABELS, PlotStatistic


def test_every_statistic_has_one_label() -> None:
    """The labels name exactly the plot's statistics; the tables offer the curve ones."""
    # Assert
    assert set(STATISTIC_LABELS) == set(get_args(PlotStatistic))
    assert PLOT == STATISTIC_LABELS
    assert set(TABLES) == set(CURVE_STATISTICS)
    assert list(TABLES) == ["top5", "final", "best", "val_best"]  # the picker's order
