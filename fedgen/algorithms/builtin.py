"""The built-in algorithms: one `AlgorithmDecl` each, in the order every list shows them.

Adding an algorithm (docs/architecture.md, "How to add an algorithm"): its params class
in `fedgen/algorithms/params.py`, its `Algorithm` in `fedgen/algorithms/<name>.py`, one
`_builtin` here (its fields by keyword; what is not given takes AlgorithmDecl's default).
`fedgen.algorithms.registry` registers `BUILTINS` when it is imported.

`ms_per_round`: milliseconds per round on one core at the paper setting (10 users x T = 20,
official CNN, Fashion-MNIST), the basis of a study's CPU-time estimate; how each figure was
measured is in docs/results/benchmarks.md ("Per-round costs of the algorithms"). Colours:
plotly's D3 palette in this order (the Compare page's first colours), then its light variants
(D3 category20's) for the non-IID baselines.

The non-IID baselines (SCAFFOLD ... FedAvgM) are not in the FedGen paper: no paper label, so
the paper's tables and `fedgen.paper.PAPER_LABELS` leave them out.
"""

from __future__ import annotations

from typing import Any

from fedgen.algorithms.decl import AlgorithmDecl, Share
from fedgen.algorithms.params import (
    AlgorithmParams,
    FedAdamParams,
    FedAvgMParams,
    FedAvgParams,
    FedDFParams,
    FedDistillParams,
    FedDistillPlusParams,
    FedDynParams,
    FedEnsembleParams,
    FedGenParams,
    FedNovaParams,
    FedProxParams,
    FedYogiParams,
    MoonParams,
    ScaffoldParams,
)

ALL: frozenset[Share] = frozenset({"all"})
ALL_OR_PREDICTOR: frozenset[Share] = frozenset({"all", "predictor"})
_declared: list[AlgorithmDecl] = []


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
    """Declare one built-in: `cls` is `module:Class` under `fedgen.algorithms`; the paper's
    label defaults to `label` (none when not `in_paper`); `more`: AlgorithmDecl's other
    fields (batchable, has_generator, ...)."""
    _declared.append(
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

#: Every built-in, in the order every list shows them.
BUILTINS: tuple[AlgorithmDecl, ...] = tuple(_declared)
