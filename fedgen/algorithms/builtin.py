"""The built-in algorithms: one `AlgorithmDecl` each, in the order every list shows them.

Adding an algorithm (docs/architecture.md, "How to add an algorithm"): its params class
in `fedgen/spec.py`, its `Algorithm` in `fedgen/algorithms/<name>.py`, one line here.

`ms_per_round`: ms per round on one core at the paper setting (10 users x T = 20,
official CNN, Fashion-MNIST), the median over the runs of the Fashion-MNIST studies of
2026-12-01 (table2, table3, fig5-delay, Table 1's FedDistill column: 2 processes x 1
thread, the runs' own `wall_s` / rounds; docs/results/studies-fashion-mnist.md).
FedEnsemble had no run that day: FedAvg's figure times its ratio to FedAvg in the
2026-11-30 Table 1 (3.9). The VM's speed varies about 2x from day to day: an estimate.
Colours: plotly's D3 palette in this order (the Compare page's colours since issue 9),
then its light variants (D3 category20's) for the baselines of issue 32.

The baselines of issue 32 (SCAFFOLD ... FedAvgM) are not in the FedGen paper: no paper
label, so the paper's tables and `fedgen.paper.PAPER_LABELS` leave them out. Their
`ms_per_round` is FedAvg's 330 times their ratio to FedAvg measured on one core on a
20-user synthetic run of 5 rounds (tests/fedgen/test_reviewer_baselines.py's setting
scaled up; 2026-12-03): an estimate until a Fashion-MNIST study times them.
"""

from __future__ import annotations

from fedgen.algorithms.params import (
    FedAdamParams,
    FedAvgMParams,
    FedDynParams,
    FedNovaParams,
    FedYogiParams,
    MoonParams,
    ScaffoldParams,
)
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
    in_paper: bool = True,
    batchable: bool = False,
) -> None:
    """Register one built-in: `cls` is `module:Class` under `fedgen.algorithms`;
    the paper's label defaults to `label` (none when not `in_paper`)."""
    register_algorithm(
        AlgorithmDecl(
            name=name,
            label=label,
            params_cls=params_cls,
            algorithm_cls=f"fedgen.algorithms.{cls}",
            colour=colour,
            ms_per_round=ms_per_round,
            shares=shares,
            paper_label=None if not in_paper else label if paper_label is None else paper_label,
            batchable=batchable,
        )
    )


# fmt: off
_builtin("FedAvg", FedAvgParams, "fedavg:FedAvg", "#1F77B4", 330.0, ALL_OR_PREDICTOR, name="fedavg", batchable=True)
_builtin("FedProx", FedProxParams, "fedprox:FedProx", "#FF7F0E", 365.0, ALL, name="fedprox", batchable=True)
_builtin("FedEnsemble", FedEnsembleParams, "fedensemble:FedEnsemble", "#2CA02C", 1280.0, ALL, name="fedensemble", batchable=True)
_builtin("FedDistill", FedDistillParams, "feddistill:FedDistill", "#D62728", 365.0, ALL, name="feddistill")
_builtin("FedDistill+", FedDistillPlusParams, "feddistill:FedDistillPlus", "#9467BD", 590.0, ALL_OR_PREDICTOR, name="feddistill-plus")
_builtin("FedDF", FedDFParams, "feddf:FedDF", "#8C564B", 1610.0, ALL_OR_PREDICTOR, "FedDFusion", name="feddf", batchable=True)
_builtin("FedGen", FedGenParams, "fedgen:FedGen", "#E377C2", 405.0, ALL_OR_PREDICTOR, name="fedgen", batchable=True)
_builtin("SCAFFOLD", ScaffoldParams, "scaffold:Scaffold", "#7F7F7F", 370.0, ALL, name="scaffold", in_paper=False)
_builtin("FedDyn", FedDynParams, "feddyn:FedDyn", "#BCBD22", 380.0, ALL, name="feddyn", in_paper=False)
_builtin("MOON", MoonParams, "moon:Moon", "#17BECF", 560.0, ALL, name="moon", in_paper=False)
_builtin("FedNova", FedNovaParams, "fednova:FedNova", "#AEC7E8", 335.0, ALL, name="fednova", in_paper=False)
_builtin("FedAdam", FedAdamParams, "fedopt:FedAdam", "#FFBB78", 340.0, ALL_OR_PREDICTOR, name="fedadam", in_paper=False)
_builtin("FedYogi", FedYogiParams, "fedopt:FedYogi", "#98DF8A", 340.0, ALL_OR_PREDICTOR, name="fedyogi", in_paper=False)
_builtin("FedAvgM", FedAvgMParams, "fedopt:FedAvgM", "#FF9896", 335.0, ALL_OR_PREDICTOR, name="fedavgm", in_paper=False)
# fmt: on
