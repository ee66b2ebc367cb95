"""Every fidelity knob, declared once: name, type, bounds, paper and official values, provenance.

A knob is a behaviour where the FedGen paper and its official code differ. Its
one `Knob` record below is the source of
* the spec field: `None` = the profile's value, with the declared bounds, placed
  in the spec section named by `home` (`fidelity`, `fedgen` = `FedGenParams`,
  `partition`, `model`, or `run` = the spec's top level) by `with_knobs`;
* the resolved value (`fedgen.fidelity.resolve`): the spec's value if set, else
  the default (`fedgen.fidelity.default_value`: per algorithm, per dataset, or the
  profile's);
* the table in docs/fidelity.md (`fedgen.fidelity.markdown_table`; a test compares them).
This module sits below the spec and the algorithms' params (they take their knob fields
from it), so what reads the algorithm registry (the per-algorithm defaults, the table that
shows them) is `fedgen.fidelity`'s.
FedGen-only knobs live with FedGen's parameters, so another algorithm's spec
carries none of them. To add a knob: one `Knob(...)` here, then use
`fid.<name>` where the behaviour is implemented.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, create_model

from fedgen.stats import CurveStatistic

Home = Literal["fidelity", "fedgen", "partition", "model", "run"]
Profile = Literal["paper", "official"]


@dataclass(frozen=True)
class Knob:
    """One paper-vs-official behaviour."""

    name: str
    type: Any  # the resolved value's type (a Literal, bool, int or float)
    paper: Any  # the `paper` profile's value
    official: Any  # the `official` profile's value
    paper_text: str  # what the paper says (docs table)
    official_text: str  # what the official code does (docs table)
    why: str  # provenance: reference section / difference number, and any remark
    home: Home = "fidelity"
    bounds: dict[str, Any] = field(default_factory=dict)  # pydantic ge/gt/le
    label: str = ""  # shown after the name in the docs table, e.g. "(client)"
    official_by_dataset: dict[str, Any] = field(default_factory=dict)  # official profile only
    description: str = ""  # the spec field's help text

    @property
    def section(self) -> str:
        return {"fedgen": "algorithm", "run": ""}.get(self.home, self.home)

    @property
    def path(self) -> str:
        """The dotted spec path of the knob's field."""
        return f"{self.section}.{self.name}" if self.section else self.name


_FEDGEN: Home = "fedgen"
KNOBS: tuple[Knob, ...] = (
    Knob(
        "aggregation",
        Literal["samples", "uniform"],
        "uniform",
        "samples",
        "Alg. 1 l.11: θ ← (1/\\|A\\|) Σ θ_k",
        "`servers/serverbase.py` `aggregate_parameters`: weighted by n_k",
        "§6 #6",
    ),
    Knob(
        "eval_timing",
        Literal["after_aggregation", "before_training"],
        "after_aggregation",
        "before_training",
        "not stated",
        "`serverbase.evaluate` at the start of each round (the last model is never evaluated)",
        "§5.1, §5.5: the official FedEnsemble evaluates its ensemble after aggregation",
    ),
    Knob(
        "statistic",
        CurveStatistic,
        "final",
        "top5",
        '"Top-1 test accuracy"',
        "`utils/plot_utils.py`: mean/std of the top-5 rounds per seed, pooled",
        "§1.1, §6 #21",
    ),
    Knob(
        "test_protocol",
        Literal["per_user", "global"],
        "global",
        "per_user",
        '"use all testing dataset"',
        "per-user label-matched splits (`data/*/generate_niid_dirichlet.py`)",
        "§6 #15",
        home="partition",
        description="per_user: label-matched per-user test splits (official); global: the whole "
        "test set (paper). None = the fidelity profile's choice.",
    ),
    Knob(
        "draws",
        Literal["official", "fedgen"],
        "fedgen",
        "official",
        "–",
        "`data/*/generate_niid_dirichlet.py`: Python `random` + NumPy's legacy generator, "
        "both seeded 42, in the script's draw order",
        '§2.1 "Exact draw order"; `fedgen`: '
        "the same procedure from one NumPy Generator seeded by `data_seed`",
        home="partition",
        description="official: the official split script's exact draws (Python random + NumPy "
        "legacy generator, in its order); fedgen: the same procedure from one NumPy Generator. "
        "None = the fidelity profile's choice (official: official, paper: fedgen).",
    ),
    Knob(
        "bn_buffers",
        Literal["local", "average"],
        "average",
        "local",
        "–",
        "only `parameters()` are sent; BN statistics stay local",
        "§3",
        home="model",
        description="BatchNorm running statistics: kept on each user (official) or averaged like "
        "parameters. None = the fidelity profile's choice.",
    ),
    Knob(
        "lr_decay",
        float,
        1.0,
        0.99,
        "SGD step β",
        "`optimizers` + ExponentialLR 0.99, `step(glob_iter)`",
        "§6 #18",
        home="run",
        bounds={"gt": 0.0, "le": 1.0},
        label="(client)",
        description="Client lr x decay^round. None = the fidelity profile's choice.",
    ),
    Knob(
        "lr_schedule",
        Literal["per_round", "per_user"],
        "per_round",
        "per_user",
        "–",
        "one scheduler per user, `step(t)` after the user's own training: in round t a user "
        "trains with lr₀·0.99^(t_prev), t_prev its last trained round (lr₀ if never)",
        "§5.1; `per_round` uses lr₀·decay^(t) for everyone",
        label="(client)",
        description="Client lr decay clock: the round index, or each user's own last trained "
        "round (the official per-user scheduler).",
    ),
    # FedGen, server side
    Knob(
        "noise",
        Literal["uniform", "normal"],
        "normal",
        "uniform",
        "Sec. 3.1: ε ∼ N(0, I)",
        "`trainmodel/generator.py`: `torch.rand`, U[0,1) (author, issue #10)",
        "§6 #1",
        home=_FEDGEN,
    ),
    Knob(
        "teacher_loss",
        Literal["mean_logits", "label_weighted_nll"],
        "mean_logits",
        "label_weighted_nll",
        "Eq. 4: CE of the uniformly averaged logits",
        "`servers/serverpFedGen.py` `train_generator`: Σ_k label-weighted NLL_k",
        "§6 #2",
        home=_FEDGEN,
    ),
    Knob(
        "teacher_broadcast_quirk",
        bool,
        False,
        True,
        "–",
        "(B,)×(B,1) product: Σ_k mean(w_k)·mean(NLL_k)",
        "§5.2; off = true per-sample Σ_k mean_i(w_{y_i,k}·NLL_{k,i})",
        home=_FEDGEN,
    ),
    Knob(
        "generator_steps",
        int,
        1,
        50,
        "Alg. 1 l.14: one step",
        "50 Adam steps (10 × 5)",
        "§6 #3",
        home=_FEDGEN,
        bounds={"ge": 0, "le": 100_000},
    ),
    Knob(
        "generator_optimizer",
        Literal["adam", "sgd"],
        "adam",
        "adam",
        'unspecified "α"',
        "Adam(0.9, 0.999)",
        "§4; `sgd` available",
        home=_FEDGEN,
    ),
    Knob(
        "generator_lr",
        float,
        3e-4,
        3e-4,
        "unspecified",
        "`utils/model_config.py` RUNCONFIGS ensemble_lr: 3e-4 (1e-4 EMNIST)",
        "§4",
        home=_FEDGEN,
        bounds={"gt": 0.0, "le": 10.0},
        official_by_dataset={"emnist-letters": 1e-4},
    ),
    Knob(
        "generator_weight_decay",
        float,
        0.0,
        1e-2,
        "–",
        "Adam weight_decay 1e-2 (L2-coupled)",
        "§4",
        home=_FEDGEN,
        bounds={"ge": 0.0, "le": 10.0},
    ),
    Knob(
        "generator_lr_decay",
        float,
        1.0,
        0.98,
        "–",
        "ExponentialLR 0.98 per round",
        "§4; we set lr₀·γ^(t) each round (resume-exact)",
        home=_FEDGEN,
        bounds={"gt": 0.0, "le": 1.0},
    ),
    Knob(
        "generator_batchnorm",
        bool,
        False,
        True,
        '"2 compact MLP layers"',
        "Linear→BatchNorm1d→ReLU→Linear; train mode on the server, eval on clients",
        "§6 #11",
        home=_FEDGEN,
    ),
    Knob(
        "diversity_loss",
        Literal["exp", "msgan", "none"],
        "msgan",
        "exp",
        "Sec. 3.1: Mao et al. 2019 (mode seeking)",
        "`generator.py` `DiversityLoss`: exp(−mean_ij[D_ε·D_z])",
        "§6 #12; `none` disables it",
        home=_FEDGEN,
    ),
    Knob(
        "diversity_weight",
        float,
        1.0,
        1.0,
        "–",
        "ensemble_eta = 1",
        "§4",
        home=_FEDGEN,
        bounds={"ge": 0.0, "le": 1000.0},
    ),
    Knob(
        "server_label_sampling",
        Literal["prior", "uniform_present"],
        "prior",
        "uniform_present",
        "y ∼ p̂(y)",
        "uniform over labels some selected user saw this round",
        "§6 #5",
        home=_FEDGEN,
    ),
    # FedGen, client side
    Knob(
        "client_label_sampling",
        Literal["prior", "uniform_available"],
        "prior",
        "uniform_available",
        "ŷ ∼ p̂(y)",
        "`users/userpFedGen.py`: uniform over all available labels",
        "§6 #5",
        home=_FEDGEN,
    ),
    Knob(
        "client_kl",
        bool,
        False,
        True,
        "Eq. 5 has no such term",
        "L_lat = β_t·KL(softmax(h(G(y_real))) ‖ p(·\\|x))",
        "§6 #7 (issues #24, #6)",
        home=_FEDGEN,
    ),
    Knob(
        "client_kl_weight",
        float,
        0.0,
        10.0,
        "–",
        "generative_beta 10 (1 EMNIST)",
        "§4",
        home=_FEDGEN,
        bounds={"ge": 0.0, "le": 1000.0},
        label="(β₀)",
        official_by_dataset={"emnist-letters": 1.0},
    ),
    Knob(
        "client_teacher_weight",
        float,
        1.0,
        10.0,
        "Eq. 5: unit weight",
        "generative_alpha 10",
        "§6 #8",
        home=_FEDGEN,
        bounds={"ge": 0.0, "le": 1000.0},
        label="(α₀)",
    ),
    Knob(
        "client_weight_decay",
        float,
        1.0,
        0.98,
        "–",
        "α_t = max(floor, α₀·0.98^t), same for β",
        "§6 #8",
        home=_FEDGEN,
        bounds={"gt": 0.0, "le": 1.0},
    ),
    Knob(
        "client_weight_floor",
        float,
        0.0,
        1e-4,
        "–",
        "1e-4",
        "§6 #8",
        home=_FEDGEN,
        bounds={"ge": 0.0, "le": 1000.0},
    ),
    Knob(
        "regularize_round0",
        bool,
        True,
        False,
        "Alg. 1 from the first round",
        "`regularization = glob_iter > 0`",
        "§6 #9",
        home=_FEDGEN,
    ),
    Knob(
        "regularization_steps",
        int,
        0,
        20,
        "–",
        "`early_stop = 20`: generator terms only in local steps < 20",
        "§6 #10; no effect at T = 20",
        home=_FEDGEN,
        bounds={"ge": 0, "le": 1000},
        description="Generator terms only in the first N local steps; 0 = all.",
    ),
    Knob(
        "client_teacher_batch_ratio",
        bool,
        False,
        True,
        "Eq. 5: unit weight",
        "teacher term × gen_batch_size / batch_size (`userpFedGen.py`)",
        "§5.2; 1 at B_G = B",
        home=_FEDGEN,
        description="Multiply the client teacher term by gen_batch_size / batch_size (official).",
    ),
    Knob(
        "label_counts",
        Literal["sampled_batches", "train_set"],
        "train_set",
        "sampled_batches",
        "Alg. 1: users send their label counter c_k",
        "counts of this round's sampled batches, +1 per label",
        '§6 #19; the +1 is removed again wherever counts become a prior or a "present" test',
        home=_FEDGEN,
        description="What users report as label counts: the labels of this round's sampled "
        "batches plus 1 (official) or their whole training set (paper's c_k).",
    ),
)

BY_NAME: dict[str, Knob] = {k.name: k for k in KNOBS}


def knobs_in(home: Home) -> tuple[Knob, ...]:
    return tuple(k for k in KNOBS if k.home == home)


def knob_fields(home: Home) -> dict[str, Any]:
    """pydantic field definitions `(type | None, Field(None, ...))` of the knobs living in `home`."""
    return {
        k.name: (k.type | None, Field(None, description=k.description or None, **k.bounds))
        for k in knobs_in(home)
    }


M = TypeVar("M", bound=BaseModel)


def with_knobs(home: Home) -> Callable[[type[M]], type[M]]:
    """Class decorator: the model plus one optional field per knob declared with this `home`.

    The knobs' fields are read through `fedgen.fidelity.resolve`, never statically.
    """

    def add(cls: type[M]) -> type[M]:
        built = create_model(
            cls.__name__,
            __base__=cls,
            __module__=cls.__module__,
            __doc__=cls.__doc__,
            **knob_fields(home),
        )
        return built

    return add
