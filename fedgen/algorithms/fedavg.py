"""FedAvg: local SGD on each selected user, then a (weighted) parameter average.

Paper: McMahan et al. 2017, "Communication-Efficient Learning of Deep Networks
from Decentralized Data", arXiv.org/abs/1602.05629.

FedAvg is exactly the `Algorithm` defaults over the shared `Federation`
(weighting `fidelity.aggregation`, BatchNorm statistics per `fidelity.bn_buffers`).
"""

from __future__ import annotations

from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.params import FedAvgParams


class FedAvg(Algorithm[FedAvgParams]):
    """FedAvg with selectable weighting (`fidelity.aggregation`) and BN handling."""
