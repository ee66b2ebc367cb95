"""What an algorithm declaration is: `AlgorithmDecl`, one per algorithm, torch-free.

The built-ins' are in `fedgen.algorithms.builtin`, plugins' come through entry points;
`fedgen.algorithms.registry` collects them. This module sits on the params classes
(`fedgen.algorithms.params`) and below the registry, the spec and the algorithm classes
(which import torch: a declaration names its class as "module:Class", loaded when a run
builds it).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Literal

from fedgen.algorithms.params import AlgorithmParams

Share = Literal["all", "predictor"]
RoundState = Literal["params", "model", "shared"]
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
COLOUR_PATTERN = re.compile(r"^#[0-9A-Fa-f]{6}$")
# Where a declaration that does not come from a plugin comes from.
BUILTIN = "fedgen"


@dataclass(frozen=True)
class AlgorithmDecl:
    """Everything the lab needs to know about one algorithm, in one place.

    `algorithm_cls` is "module:Class" (imported when a run builds the algorithm) or the
    class itself; `ms_per_round` is the CPU cost model of the study estimates: ms per
    round on one core at the paper setting (10 users x T = 20, official CNN, Fashion-MNIST;
    `fedgen.studies.costs.estimate_cpu_s` scales it), required: an algorithm without one
    cannot be registered, so no estimate silently falls back to a guess.
    """

    name: str
    label: str
    params_cls: type[AlgorithmParams]
    algorithm_cls: str | type[Any]  # a `fedgen.algorithms.base.Algorithm` (torch: above)
    colour: str
    ms_per_round: float
    shares: frozenset[Share] = frozenset({"all"})
    paper_label: str | None = None
    source: str = BUILTIN  # the plugin's distribution, or "fedgen" for a built-in
    # Its client update can run as one computation for many users (`execution: batched`,
    # `Algorithm.client_update_batch`); False: it always runs one user after another.
    batchable: bool = False
    # Parameter-sized stacks its batched step keeps beyond FedAvg's (SCAFFOLD's c − c_i: 1;
    # FedDyn's g_k and anchor: 2): `batch_clients: auto` sizes chunks with them.
    batched_state_copies: int = 0
    # What the lab reads here instead of branching on the algorithm's name:
    # its server trains a generator whose checkpoints the Inspect page shows
    has_generator: bool = False
    # the `fedgen.knobs` home its params section holds (FedGen's generator knobs: "fedgen")
    knob_home: str | None = None
    # knob name -> the value it takes for this algorithm under either profile, unless set
    knob_defaults: tuple[tuple[str, Any], ...] = ()
    # spec fields (dotted) its timing rows are told apart by (Table 3: FedGen's B_G)
    timing_fields: tuple[str, ...] = ()
    # the algorithm timing ratios are taken against (Table 3: FedAvg)
    timing_reference: bool = False
    # its training reads `partition.test_protocol` (FedDF validates its distillation as the
    # run evaluates), so runs differing only in the protocol cannot share one training
    # (`fedgen.protocol_twins`)
    trains_by_protocol: bool = False
    # checkpoint contents besides the shared model (fedgen.sizes): every user keeps its whole
    # model; per-user and global label logits; the server's own torch RNG state
    personal_model: bool = False
    label_logits: bool = False
    server_rng: bool = False
    # what it keeps from round to round (fedgen.sizes): per user, and on the server with its
    # number of copies; "params" every parameter, "model" the whole model (buffers too),
    # "shared" the parameters the users share
    kept_per_user: RoundState | None = None
    kept_on_server: tuple[RoundState, int] | None = None

    def load_class(self) -> type[Any]:
        """The algorithm class, an `Algorithm` subclass (imports its module on first use:
        torch; `fedgen.algorithms.base.build_algorithm` makes one)."""
        if not isinstance(self.algorithm_cls, str):
            return self.algorithm_cls
        module, _, attr = self.algorithm_cls.partition(":")
        cls: type[Any] = getattr(importlib.import_module(module), attr)
        return cls
