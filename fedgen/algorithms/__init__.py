"""The federated algorithms: one module per algorithm, one declaration each.

Each algorithm is `Algorithm[P]` over its own parameter class `P` (a
`fedgen.spec.AlgorithmParams`) and uses the shared `Federation`
(`fedgen.algorithms.shared`). Its `AlgorithmDecl` (`fedgen.algorithms.registry`;
the built-ins' in `fedgen.algorithms.builtin`, plugins' through entry points) says
which class runs it; `build_algorithm(ctx)` makes the one a spec names.

Names resolve on first use (PEP 562): importing the registry, as `fedgen.spec` does,
does not load torch through the algorithm modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fedgen.algorithms.base import Algorithm, ClientUpload, RunContext
    from fedgen.algorithms.fedavg import FedAvg
    from fedgen.algorithms.feddf import FedDF
    from fedgen.algorithms.feddistill import FedDistill, FedDistillPlus
    from fedgen.algorithms.fedensemble import FedEnsemble
    from fedgen.algorithms.fedgen import FedGen
    from fedgen.algorithms.fedprox import FedProx
    from fedgen.algorithms.shared import Federation

_HOME = {
    "Algorithm": "fedgen.algorithms.base",
    "ClientUpload": "fedgen.algorithms.base",
    "RunContext": "fedgen.algorithms.base",
    "FedAvg": "fedgen.algorithms.fedavg",
    "FedDF": "fedgen.algorithms.feddf",
    "FedDistill": "fedgen.algorithms.feddistill",
    "FedDistillPlus": "fedgen.algorithms.feddistill",
    "FedEnsemble": "fedgen.algorithms.fedensemble",
    "FedGen": "fedgen.algorithms.fedgen",
    "FedProx": "fedgen.algorithms.fedprox",
    "Federation": "fedgen.algorithms.shared",
}


def build_algorithm(ctx: RunContext) -> Algorithm[Any]:
    """The algorithm `ctx.spec.algorithm` names, given its parameters.

    The spec's `algorithm` field validates against the registered params classes by
    `name`, and each registered class is generic in exactly its params class.
    """
    from fedgen.algorithms.registry import get_algorithm

    params = ctx.spec.algorithm
    return get_algorithm(params.name).load_class()(ctx, params)


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'fedgen.algorithms' has no attribute {name!r}")


__all__ = [
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
