"""FedAvg with server learning-rate decay for FedGen Lab: the declaration the
`fedgen.algorithms` entry point names.

Torch-free: the lab imports this module at start (`fedgen validate`, the API); the
algorithm itself (`fedgen_lrdecay.algorithm`, torch) is imported only by a run.
"""

from __future__ import annotations

from fedgen.algorithms.decl import AlgorithmDecl
from fedgen_lrdecay.params import FedAvgDecayParams

__version__ = "0.1.0"

DECL = AlgorithmDecl(
    name="fedavg-decay",
    label="FedAvg-decay",
    params_cls=FedAvgDecayParams,
    algorithm_cls="fedgen_lrdecay.algorithm:FedAvgDecay",
    colour="#C5B0D5",
    # FedAvg's 330 ms per round at the paper setting plus one pass over the weights.
    ms_per_round=335.0,
    shares=frozenset({"all", "predictor"}),
)

__all__ = ["DECL", "FedAvgDecayParams"]
