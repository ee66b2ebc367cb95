"""The runs whose CPU results tests/fedgen/fingerprints.json pins: one case per built-in
algorithm (tests/fedgen/test_algorithm_registry.py checks that every built-in has one)."""

from __future__ import annotations

from typing import Any

# Small generator batches keep the 50 official generator steps per round cheap.
FEDGEN: dict[str, Any] = {"name": "fedgen", "gen_batch_size": 4, "server_batch_size": 4}


CASES: dict[str, dict[str, Any]] = {
    "fedavg-official": {"algorithm": {"name": "fedavg"}},
    "fedavg-paper": {"algorithm": {"name": "fedavg"}, "fidelity": {"profile": "paper"}},
    "fedprox-paper": {"algorithm": {"name": "fedprox", "mu": 0.1}},
    "fedprox-official": {"algorithm": {"name": "fedprox", "variant": "official"}},
    "feddistill": {"algorithm": {"name": "feddistill"}},
    "feddistill-plus": {"algorithm": {"name": "feddistill-plus"}},
    "fedensemble": {"algorithm": {"name": "fedensemble"}},
    "feddf": {
        "algorithm": {
            "name": "feddf",
            "proxy_size": 200,
            "distill_steps": 5,
            "distill_batch_size": 32,
        }
    },
    "fedgen-official": {"algorithm": FEDGEN},
    "fedgen-paper": {"algorithm": FEDGEN, "fidelity": {"profile": "paper"}},
    "fedgen-predictor": {"algorithm": FEDGEN, "share": "predictor"},
    "scaffold": {"algorithm": {"name": "scaffold"}},
    "feddyn": {"algorithm": {"name": "feddyn", "alpha": 0.1}},
    "moon": {"algorithm": {"name": "moon"}},
    "fednova": {"algorithm": {"name": "fednova", "local_steps_spread": 3}},
    "fedadam": {"algorithm": {"name": "fedadam", "server_lr": 0.03}},
    "fedyogi": {"algorithm": {"name": "fedyogi", "server_lr": 0.03}},
    "fedavgm": {"algorithm": {"name": "fedavgm", "server_lr": 0.5}},
}
