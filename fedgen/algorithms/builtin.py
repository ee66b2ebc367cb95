"""The built-in algorithms: one `AlgorithmDecl` each, in the order every list shows them.

Adding an algorithm (docs/architecture.md, "How to add an algorithm"): its params class
in `fedgen/spec.py`, its `Algorithm` in `fedgen/algorithms/<name>.py`, one line here.

`ms_per_round`: ms per round on one core at the paper setting (10 users x T = 20,
official CNN, Fashion-MNIST), the median over the runs of the Fashion-MNIST studies of
2026-12-01 (table2, table3, fig5-delay, Table 1's FedDistill column: 2 processes x 1
thread, the runs' own `wall_s` / rounds; docs/results/studies-fashion-mnist.md).
FedEnsemble had no run that day: FedAvg's figure times its ratio to FedAvg in the
2026-11-30 Table 1 (3.9). The VM's speed varies about 2x from day to day: an estimate.
Colours: plotly's D3 palette in this order (the Compare page's colours since issue 9).
"""

from __future__ import annotations

from fedgen.algorithms.registry import AlgorithmDecl, Share, register_algorithm
from fedgen.spec import (
    FedAvgParams,
    FedDFParams,
    FedDistillParams,
    FedDistillPlusParams,
    FedEnsembleParams,
    FedGenParams,
    FedProxParams,
)

ALL: frozenset[Share] = frozenset({"all"})
ALL_OR_PREDICTOR: frozenset[Share] = frozenset({"all", "predictor"})

register_algorithm(
    AlgorithmDecl(
        name="fedavg",
        label="FedAvg",
        params_cls=FedAvgParams,
        algorithm_cls="fedgen.algorithms.fedavg:FedAvg",
        colour="#1F77B4",
        ms_per_round=330.0,
        shares=ALL_OR_PREDICTOR,
        paper_label="FedAvg",
    )
)
register_algorithm(
    AlgorithmDecl(
        name="fedprox",
        label="FedProx",
        params_cls=FedProxParams,
        algorithm_cls="fedgen.algorithms.fedprox:FedProx",
        colour="#FF7F0E",
        ms_per_round=365.0,
        shares=ALL,
        paper_label="FedProx",
    )
)
register_algorithm(
    AlgorithmDecl(
        name="fedensemble",
        label="FedEnsemble",
        params_cls=FedEnsembleParams,
        algorithm_cls="fedgen.algorithms.fedensemble:FedEnsemble",
        colour="#2CA02C",
        ms_per_round=1280.0,
        shares=ALL,
        paper_label="FedEnsemble",
    )
)
register_algorithm(
    AlgorithmDecl(
        name="feddistill",
        label="FedDistill",
        params_cls=FedDistillParams,
        algorithm_cls="fedgen.algorithms.feddistill:FedDistill",
        colour="#D62728",
        ms_per_round=365.0,
        shares=ALL,
        paper_label="FedDistill",
    )
)
register_algorithm(
    AlgorithmDecl(
        name="feddistill-plus",
        label="FedDistill+",
        params_cls=FedDistillPlusParams,
        algorithm_cls="fedgen.algorithms.feddistill:FedDistillPlus",
        colour="#9467BD",
        ms_per_round=590.0,
        shares=ALL_OR_PREDICTOR,
        paper_label="FedDistill+",
    )
)
register_algorithm(
    AlgorithmDecl(
        name="feddf",
        label="FedDF",
        params_cls=FedDFParams,
        algorithm_cls="fedgen.algorithms.feddf:FedDF",
        colour="#8C564B",
        ms_per_round=1610.0,
        shares=ALL_OR_PREDICTOR,
        paper_label="FedDFusion",
    )
)
register_algorithm(
    AlgorithmDecl(
        name="fedgen",
        label="FedGen",
        params_cls=FedGenParams,
        algorithm_cls="fedgen.algorithms.fedgen:FedGen",
        colour="#E377C2",
        ms_per_round=405.0,
        shares=ALL_OR_PREDICTOR,
        paper_label="FedGen",
    )
)
