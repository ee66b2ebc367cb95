"""The algorithm registry: spec name -> class. One module per algorithm.

Each algorithm is `Algorithm[P]` over its own parameter class `P` (from
`fedgen.spec`) and uses the shared `Federation` (`fedgen.algorithms.shared`).
`build_algorithm(ctx)` makes the one a spec names.
"""

from __future__ import annotations

from typing import Any

from fedgen.algorithms.base import Algorithm, ClientUpload, RunContext
from fedgen.algorithms.fedavg import FedAvg
from fedgen.algorithms.feddf import FedDF
from fedgen.algorithms.feddistill import FedDistill, FedDistillPlus
from fedgen.algorithms.fedensemble import FedEnsemble
from fedgen.algorithms.fedgen import FedGen
from fedgen.algorithms.fedprox import FedProx
from fedgen.algorithms.shared import Federation

ALGORITHMS: dict[str, type[Algorithm[Any]]] = {
    "fedavg": FedAvg,
    "fedprox": FedProx,
    "fedensemble": FedEnsemble,
    "feddistill": FedDistill,
    "feddistill-plus": FedDistillPlus,
    "feddf": FedDF,
    "fedgen": FedGen,
}


def build_algorithm(ctx: RunContext) -> Algorithm[Any]:
    """The algorithm `ctx.spec.algorithm` names, given its parameters.

    The spec's discriminated union makes `algorithm.name` select its params
    class, and each registered class is generic in exactly that class.
    """
    params = ctx.spec.algorithm
    return ALGORITHMS[params.name](ctx, params)


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
    "Federation",
    "RunContext",
    "build_algorithm",
]
