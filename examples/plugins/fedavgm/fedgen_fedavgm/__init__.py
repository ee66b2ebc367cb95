"""FedAvgM for FedGen Lab: the declaration the `fedgen.algorithms` entry point names.

Torch-free: the lab imports this module at start (`fedgen validate`, the API); the
algorithm itself (`fedgen_fedavgm.algorithm`, torch) is imported only by a run.
"""

from __future__ import annotations

from fedgen.algorithms.registry import AlgorithmDecl
from fedgen_fedavgm.params import FedAvgMParams

__version__ = "0.1.0"

DECL = AlgorithmDecl(
    name="fedavgm",
    label="FedAvgM",
    params_cls=FedAvgMParams,
    algorithm_cls="fedgen_fedavgm.algorithm:FedAvgM",
    colour="#17BECF",
    # FedAvg's 330 ms per round at the paper setting plus one pass over the weights.
    ms_per_round=335.0,
    shares=frozenset({"all", "predictor"}),
)

__all__ = ["DECL", "FedAvgMParams"]
