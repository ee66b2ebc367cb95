"""bench/protocol_order.py: rankings per protocol and the pairs of methods whose order flips."""

from __future__ import annotations

from typing import Any

from bench.protocol_order import report


def _cell(row: str, column: str, mean: float, std: float, n: int = 3) -> dict[str, Any]:
    return {"row": row, "column": column, "mean": mean, "std": std, "n": n}


def test_a_flip_is_named_with_both_differences_and_whether_it_exceeds_the_std() -> None:
    pu, gl = "α=0.1, T=20, per-user test", "α=0.1, T=20, global test"
    doc = {
        "rows": [pu, gl],
        "columns": ["FedAvg", "FedGen", "FedDF"],
        "cells": [
            _cell(pu, "FedAvg", 80.0, 0.5),
            _cell(pu, "FedGen", 84.0, 0.2),
            _cell(pu, "FedDF", 82.0, 0.3),
            _cell(gl, "FedAvg", 72.0, 0.5),
            _cell(gl, "FedGen", 73.0, 0.2),
            _cell(gl, "FedDF", 80.0, 1.5),
        ],
    }
    lines = report(doc)
    assert lines[0] == "α=0.1, T=20"
    assert lines[1].startswith("  per-user: FedGen 84.00±0.20 > FedDF 82.00±0.30 > FedAvg")
    assert lines[2].startswith("  global  : FedDF 80.00±1.50 > FedGen 73.00±0.20 > FedAvg")
    assert lines[3] == "  order changes: FedGen vs FedDF: per-user +2.00, global -7.00"


def test_no_flip_within_a_setting_and_a_setting_missing_a_protocol_is_left_out() -> None:
    pu, gl = "α=1, T=20, per-user test", "α=1, T=20, global test"
    doc = {
        "rows": [pu, gl, "α=0.05, T=20, per-user test"],
        "columns": ["FedAvg", "FedGen"],
        "cells": [
            _cell(pu, "FedAvg", 80.0, 0.5),
            _cell(pu, "FedGen", 80.2, 0.4),
            _cell(gl, "FedAvg", 79.0, 0.5),
            _cell(gl, "FedGen", 79.1, 0.4, n=2),
            _cell("α=0.05, T=20, per-user test", "FedAvg", 70.0, 1.0),
        ],
    }
    lines = report(doc)
    assert lines[0] == "α=1, T=20"
    assert "FedGen 79.10±0.40 (n=2)" in lines[2]
    assert lines[3] == "  order changes: none"
    assert len(lines) == 4


def test_a_flip_smaller_than_the_std_says_so() -> None:
    pu, gl = "s, per-user test", "s, global test"
    doc = {
        "rows": [pu, gl],
        "columns": ["A", "B"],
        "cells": [
            _cell(pu, "A", 80.1, 0.5),
            _cell(pu, "B", 80.0, 0.5),
            _cell(gl, "A", 79.0, 0.5),
            _cell(gl, "B", 79.2, 0.5),
        ],
    }
    assert report(doc)[-1] == (
        "  order changes: A vs B: per-user +0.10 (within std), global -0.20 (within std)"
    )
