"""The Inspect figures name every class: the latent legend in rows, a tick per class."""

from __future__ import annotations

import pandas as pd

from dashboard import charts
from dashboard.inspect_page.latents import every_class_in_legend, every_class_on_axis


def _points(classes: int) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"pc1": float(c), "pc2": 0.0, "label": c, "round": r}
            for r in (1, 50)
            for c in range(classes)
        ]
    )


def test_legend_lists_every_class_in_rows_above_the_panels() -> None:
    """Ten classes (and 26): one legend entry each, laid out in rows, the chart taller per row
    (a vertical legend in 420 px holds about eight and hid classes 8-9)."""
    ten = every_class_in_legend(charts.latent_scatter(_points(10)))
    many = every_class_in_legend(charts.latent_scatter(_points(26)))
    names = [t.name for t in ten.data if t.showlegend is not False]
    assert names == [f"class {c}" for c in range(10)]
    assert ten.layout.legend.orientation == "h"
    assert ten.layout.legend.yanchor == "bottom"
    assert many.layout.height > ten.layout.height > 420


def test_heatmap_has_a_tick_per_class() -> None:
    """The class axis is categorical with one tick per class, not every second number."""
    fig = every_class_on_axis(charts.label_heatmap([[1] * 10, [2] * 10]))
    assert fig.layout.xaxis.type == "category"
    assert list(fig.data[0].x) == [str(c) for c in range(10)]
