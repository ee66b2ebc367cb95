"""The algorithm registry: spec name -> class. One module per algorithm."""

from __future__ import annotations

from collections.abc import Callable

from fedgen.algorithms.base import Algorithm, ClientUpload, RunContext
from fedgen.algorithms.fedavg import FedAvg
from fedgen.algorithms.fedprox import FedProx

ALGORITHMS: dict[str, Callable[[RunContext], Algorithm]] = {
    "fedavg": FedAvg,
    "fedprox": FedProx,
}

__all__ = ["ALGORITHMS", "Algorithm", "ClientUpload", "FedAvg", "FedProx", "RunContext"]
