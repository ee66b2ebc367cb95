"""The algorithm registry: spec name -> class. One module per algorithm."""

from __future__ import annotations

from collections.abc import Callable

from fedgen.algorithms.base import Algorithm, ClientUpload, RunContext
from fedgen.algorithms.fedavg import FedAvg
from fedgen.algorithms.feddf import FedDF
from fedgen.algorithms.feddistill import FedDistill, FedDistillPlus
from fedgen.algorithms.fedensemble import FedEnsemble
from fedgen.algorithms.fedgen import FedGen
from fedgen.algorithms.fedprox import FedProx

ALGORITHMS: dict[str, Callable[[RunContext], Algorithm]] = {
    "fedavg": FedAvg,
    "fedprox": FedProx,
    "fedensemble": FedEnsemble,
    "feddistill": FedDistill,
    "feddistill-plus": FedDistillPlus,
    "feddf": FedDF,
    "fedgen": FedGen,
}

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "ClientUpload",
    "FedAvg",
    "FedDF",
    "FedDistill",
    "FedDistillPlus",
    "FedEnsemble",
    "FedGen",
    "FedProx",
    "RunContext",
]
