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
    AlgorithmParams,
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


def _builtin(
    label: str,
    params_cls: type[AlgorithmParams],
    cls: str,
    colour: str,
    ms_per_round: float,
    shares: frozenset[Share],
    paper_label: str | None = None,
    *,
    name: str,
) -> None:
    """Register one built-in: `cls` is `module:Class` under `fedgen.algorithms`;
    the paper's label defaults to `label`."""
    register_algorithm(
        AlgorithmDecl(
            name=name,
            label=label,
            params_cls=params_cls,
            algorithm_cls=f"fedgen.algorithms.{cls}",
            colour=colour,
            ms_per_round=ms_per_round,
            shares=shares,
            paper_label=label if paper_label is None else paper_label,
        )
    )


# fmt: off
_builtin("FedAvg", FedAvgParams, "fedavg:FedAvg", "#1F77B4", 330.0, ALL_OR_PREDICTOR, name="fedavg")
_builtin("FedProx", FedProxParams, "fedprox:FedProx", "#FF7F0E", 365.0, ALL, name="fedprox")
_builtin("FedEnsemble", FedEnsembleParams, "fedensemble:FedEnsemble", "#2CA02C", 1280.0, ALL, name="fedensemble")
_builtin("FedDistill", FedDistillParams, "feddistill:FedDistill", "#D62728", 365.0, ALL, name="feddistill")
_builtin("FedDistill+", FedDistillPlusParams, "feddistill:FedDistillPlus", "#9467BD", 590.0, ALL_OR_PREDICTOR, name="feddistill-plus")
_builtin("FedDF", FedDFParams, "feddf:FedDF", "#8C564B", 1610.0, ALL_OR_PREDICTOR, "FedDFusion", name="feddf")
_builtin("FedGen", FedGenParams, "fedgen:FedGen", "#E377C2", 405.0, ALL_OR_PREDICTOR, name="fedgen")
# fmt: on
