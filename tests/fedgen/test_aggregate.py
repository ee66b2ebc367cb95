"""Aggregation weights and weighted averages on hand-made tensors."""

from __future__ import annotations

import pytest
import torch

from fedgen.aggregate import aggregation_weights, state_nbytes, weighted_average


def test_weights() -> None:
    """Sample weighting is proportional; uniform is equal."""
    assert aggregation_weights([1, 3], "samples") == [0.25, 0.75]
    assert aggregation_weights([1, 3], "uniform") == [0.5, 0.5]
    with pytest.raises(ValueError, match="unknown aggregation"):
        aggregation_weights([1], "median")


def test_weighted_average_floats_and_counters() -> None:
    """Floating tensors are averaged; integer counters take the max."""
    a = {"w": torch.tensor([0.0, 4.0]), "n": torch.tensor(3)}
    b = {"w": torch.tensor([4.0, 0.0]), "n": torch.tensor(5)}
    out = weighted_average([a, b], [0.25, 0.75])
    assert torch.equal(out["w"], torch.tensor([3.0, 1.0]))
    assert int(out["n"]) == 5
    assert state_nbytes(a) == 2 * 4 + 8
