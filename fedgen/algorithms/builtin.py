"""The built-in algorithms: one `AlgorithmDecl` each, in the order every list shows them.

Adding an algorithm (docs/architecture.md, "How to add an algorithm"): its params class
in `fedgen/spec.py`, its `Algorithm` in `fedgen/algorithms/<name>.py`, one `_builtin` here
(its fields by keyword; what is not given takes AlgorithmDecl's default).

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
`ms_per_round` is FedAvg's 330 times their ratio to FedAvg: the median round of 3-round
synthetic runs at the paper setting (20 users, 10 a round, T = 20, B = 32, one thread),
twice each, on a shared and loaded 2-core VM (2026-12-03; rounds varied 2x between
repeats). MOON took 3x FedAvg (three forward passes a step), the others 0.9-1.2x (FedDyn
1.7x once), within the noise: 1.05x is assumed for the client-side corrections and the
server optimisers. An estimate until a Fashion-MNIST study times them.
"""

from __future__ import annotations

from typing import Any

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
    *,
    name: str,
    label: str,
    params: type[AlgorithmParams],
    cls: str,
    colour: str,
    ms_per_round: float,
    shares: frozenset[Share] = ALL,
    paper_label: str | None = None,
    in_paper: bool = True,
    **more: Any,
) -> None:
    """Register one built-in: `cls` is `module:Class` under `fedgen.algorithms`; the paper's
    label defaults to `label` (none when not `in_paper`); `more`: AlgorithmDecl's other
    fields (batchable, has_generator, ...)."""
    register_algorithm(
        AlgorithmDecl(
            name=name,
            label=label,
            params_cls=params,
            algorithm_cls=f"fedgen.algorithms.{cls}",
            colour=colour,
            ms_per_round=ms_per_round,
            shares=shares,
            paper_label=None if not in_paper else label if paper_label is None else paper_label,
            **more,
        )
    )


_builtin(
    name="fedavg",
    label="FedAvg",
    params=FedAvgParams,
    cls="fedavg:FedAvg",
    colour="#1F77B4",
    ms_per_round=330.0,
    shares=ALL_OR_PREDICTOR,
    batchable=True,
    timing_reference=True,
)
_builtin(
    name="fedprox",
    label="FedProx",
    params=FedProxParams,
    cls="fedprox:FedProx",
    colour="#FF7F0E",
    ms_per_round=365.0,
    batchable=True,
)
_builtin(
    name="fedensemble",
    label="FedEnsemble",
    params=FedEnsembleParams,
    cls="fedensemble:FedEnsemble",
    colour="#2CA02C",
    ms_per_round=1280.0,
    batchable=True,
    # The official FedEnsemble evaluates its ensemble after aggregation (docs/fidelity.md).
    knob_defaults=(("eval_timing", "after_aggregation"),),
)
_builtin(
    name="feddistill",
    label="FedDistill",
    params=FedDistillParams,
    cls="feddistill:FedDistill",
    colour="#D62728",
    ms_per_round=365.0,
    personal_model=True,
    label_logits=True,
)
_builtin(
    name="feddistill-plus",
    label="FedDistill+",
    params=FedDistillPlusParams,
    cls="feddistill:FedDistillPlus",
    colour="#9467BD",
    ms_per_round=590.0,
    shares=ALL_OR_PREDICTOR,
    label_logits=True,
)
_builtin(
    name="feddf",
    label="FedDF",
    params=FedDFParams,
    cls="feddf:FedDF",
    colour="#8C564B",
    ms_per_round=1610.0,
    shares=ALL_OR_PREDICTOR,
    paper_label="FedDFusion",
    batchable=True,
    server_rng=True,
    trains_by_protocol=True,
)
_builtin(
    name="fedgen",
    label="FedGen",
    params=FedGenParams,
    cls="fedgen:FedGen",
    colour="#E377C2",
    ms_per_round=405.0,
    shares=ALL_OR_PREDICTOR,
    batchable=True,
    has_generator=True,
    knob_home="fedgen",
    timing_fields=("algorithm.gen_batch_size",),
)
_builtin(
    name="scaffold",
    label="SCAFFOLD",
    params=ScaffoldParams,
    cls="scaffold:Scaffold",
    colour="#7F7F7F",
    ms_per_round=345.0,
    in_paper=False,
    kept_per_user="params",  # c_i
    kept_on_server=("params", 1),  # c
    batchable=True,
    batched_state_copies=1,  # c − c_i per stacked client
)
_builtin(
    name="feddyn",
    label="FedDyn",
    params=FedDynParams,
    cls="feddyn:FedDyn",
    colour="#BCBD22",
    ms_per_round=345.0,
    in_paper=False,
    kept_per_user="params",  # g_k
    kept_on_server=("params", 1),  # h
    batchable=True,
    batched_state_copies=2,  # g_k and the anchor per stacked client
)
_builtin(
    name="moon",
    label="MOON",
    params=MoonParams,
    cls="moon:Moon",
    colour="#17BECF",
    ms_per_round=1000.0,
    in_paper=False,
    kept_per_user="model",  # the previous local model
)
_builtin(
    name="fednova",
    label="FedNova",
    params=FedNovaParams,
    cls="fednova:FedNova",
    colour="#AEC7E8",
    ms_per_round=330.0,
    in_paper=False,
)
_builtin(
    name="fedadam",
    label="FedAdam",
    params=FedAdamParams,
    cls="fedopt:FedAdam",
    colour="#FFBB78",
    ms_per_round=345.0,
    shares=ALL_OR_PREDICTOR,
    in_paper=False,
    kept_on_server=("shared", 2),  # m and v
    batchable=True,  # FedAvg's clients; only the server step differs
)
_builtin(
    name="fedyogi",
    label="FedYogi",
    params=FedYogiParams,
    cls="fedopt:FedYogi",
    colour="#98DF8A",
    ms_per_round=345.0,
    shares=ALL_OR_PREDICTOR,
    in_paper=False,
    kept_on_server=("shared", 2),  # m and v
    batchable=True,  # FedAvg's clients; only the server step differs
)
_builtin(
    name="fedavgm",
    label="FedAvgM",
    params=FedAvgMParams,
    cls="fedopt:FedAvgM",
    colour="#FF9896",
    ms_per_round=345.0,
    shares=ALL_OR_PREDICTOR,
    in_paper=False,
    kept_on_server=("shared", 1),  # the velocity
    batchable=True,  # FedAvg's clients; only the server step differs
)
