"""Every built-in algorithm's parameters: the spec's `algorithm` section, one class per
name, torch-free.

`AlgorithmParams` is the base of every params class, a plugin's included. The paper's
algorithms (FedAvg, FedProx, FedEnsemble, FedDistill, FedDistill+, FedDF, FedGen) come
first, then the non-IID baselines reviewers ask for (SCAFFOLD, FedDyn, MOON, FedNova and the
server optimisers FedAdam, FedYogi, FedAvgM). Each class's `AlgorithmDecl`
(`fedgen.algorithms.builtin`) registers it, and the registry makes the spec's discriminated
`algorithm` field of them, so this module sits below both the registry and `fedgen.spec`
(import every params class and `AlgorithmParams` from here): declarations flow one way,
from here up to the spec. Every bound is explicit, so an out-of-range value is refused
naming `algorithm.<name>.<field>` and the limit. The baselines' defaults are the values each
paper recommends for a small CNN (see each algorithm's module for the source).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from fedgen.data_spec import ProxyName
from fedgen.knobs import with_knobs
from fedgen.spec_base import MAX_BATCH, MAX_DIM, MAX_LOCAL_STEPS, StrictModel


class AlgorithmParams(StrictModel):
    """The base of every algorithm's parameters (the spec's `algorithm` section).

    A subclass sets `name: Literal["<its name>"] = "<its name>"` (the discriminator) and
    bounded fields; its `AlgorithmDecl` (`fedgen.algorithms.registry`) registers it.
    """

    name: str

    @property
    def projection_head_dim(self) -> int:
        """Width of the projection head the algorithm's model carries between its features
        and its predictor (`fedgen.models.cnn.add_projection_head`); 0 = none (MOON's
        `projection_dim` sets it)."""
        return 0


class FedAvgParams(AlgorithmParams):
    """FedAvg (McMahan et al. 2017). Weighting is `fidelity.aggregation`."""

    name: Literal["fedavg"] = "fedavg"


class FedProxParams(AlgorithmParams):
    """FedProx (Li et al. 2020). `paper`: mu/2*||w-w_t||^2; `official`: lamda*(w-w_t) + l2*w."""

    name: Literal["fedprox"] = "fedprox"
    variant: Literal["paper", "official"] = "paper"
    mu: float = Field(0.01, ge=0.0, le=100.0, description="Proximal coefficient (paper variant).")
    lamda: float = Field(
        1.0, ge=0.0, le=100.0, description="Official variant: proximal coefficient."
    )
    l2: float = Field(0.001, ge=0.0, le=100.0, description="Official variant: extra weight decay.")


class FedEnsembleParams(AlgorithmParams):
    """FedEnsemble: FedAvg training, evaluated as the ensemble of all users' models."""

    name: Literal["fedensemble"] = "fedensemble"


class FedDistillParams(AlgorithmParams):
    """FedDistill (Jeong et al. 2018): users share per-label mean logits, not weights."""

    name: Literal["feddistill"] = "feddistill"
    reg_alpha: float = Field(
        1.0, ge=0.0, le=1000.0, description="Weight of the KL to the global label logits."
    )


class FedDistillPlusParams(AlgorithmParams):
    """FedDistill+ (official name FedDistill-FL): FedDistill plus parameter averaging."""

    name: Literal["feddistill-plus"] = "feddistill-plus"
    reg_alpha: float = Field(
        1.0, ge=0.0, le=1000.0, description="Weight of the KL to the global label logits."
    )


class FedDFParams(AlgorithmParams):
    """FedDF (Lin et al. 2020): server-side ensemble distillation on an unlabeled proxy set."""

    name: Literal["feddf"] = "feddf"
    proxy: ProxyName = Field(
        "heldout",
        description="'heldout': a slice of the training set no user holds; or a dataset name.",
    )
    proxy_size: int = Field(5000, ge=1, le=200_000)
    distill_steps: int = Field(100, ge=0, le=100_000)
    distill_batch_size: int = Field(128, ge=1, le=MAX_BATCH)
    distill_lr: float = Field(1e-3, gt=0.0, le=10.0)
    temperature: float = Field(1.0, gt=0.0, le=100.0)
    distill_bn: Literal["eval", "train"] = Field(
        "eval",
        description="BatchNorm of the student while distilling: 'eval' normalises with the "
        "statistics the global model is evaluated with; 'train' with each proxy batch's own.",
    )
    val_size: int = Field(
        1000,
        ge=0,
        le=200_000,
        description="Labelled held-out training samples (no user's, disjoint from the proxy) for "
        "early stopping (Lin et al. 2020): the global model takes the student's best validated "
        "step, the averaged model (step 0) included. 0 = no validation, all distill_steps kept.",
    )
    val_every: int = Field(
        10, ge=1, le=100_000, description="Distillation steps between validation checks."
    )
    patience: int = Field(
        3,
        ge=0,
        le=100_000,
        description="Stop after this many validation checks without improvement; 0 = never stop "
        "early (the best check is still kept).",
    )
    min_delta: float = Field(
        1.0,
        ge=0.0,
        le=100.0,
        description="Validation accuracy points (0-100 scale) a check must gain over the best so "
        "far to count as an improvement and be kept; 0 = any strict gain. With 1,000 validation "
        "samples one sample is about 0.1 point.",
    )


GeneratorPreset = Literal["default", "cnn0", "cnn1", "cnn2", "cnn3"]


@with_knobs("fedgen")
class FedGenParams(AlgorithmParams):
    """FedGen (Zhu et al. 2021): a server-side conditional generator of latent features.

    Dimensions left None come from `preset` (Table 2 configurations, reference §4); the
    FedGen-only fidelity knobs (`fedgen.knobs`, home "fedgen") are fields here too.
    """

    name: Literal["fedgen"] = "fedgen"
    preset: GeneratorPreset = "default"
    noise_dim: int | None = Field(None, ge=1, le=MAX_DIM)
    hidden_dim: int | None = Field(None, ge=1, le=MAX_DIM)
    embedding: bool = Field(False, description="Label input as nn.Embedding instead of one-hot.")
    gen_batch_size: int = Field(
        32, ge=1, le=MAX_BATCH, description="B_G: generated samples per local step."
    )
    server_batch_size: int = Field(
        32, ge=1, le=MAX_BATCH, description="Batch of each generator step."
    )


class ScaffoldParams(AlgorithmParams):
    """SCAFFOLD (Karimireddy et al. 2020): control variates correct client drift (option II)."""

    name: Literal["scaffold"] = "scaffold"
    global_lr: float = Field(
        1.0,
        gt=0.0,
        le=10.0,
        description="η_g: the server's step along the averaged update (1 = take the average).",
    )
    variate_weighting: Literal["uniform", "aggregation"] = Field(
        "uniform",
        description="how the server averages the users' Δc_i: 'uniform' (the paper's line 17; "
        "c stays the mean of all users' c_i) or 'aggregation' (the weights of the model's "
        "mean, fidelity.aggregation: by samples under the official profile)",
    )


class FedDynParams(AlgorithmParams):
    """FedDyn (Acar et al. 2021): a dynamic regulariser aligns local and global optima."""

    name: Literal["feddyn"] = "feddyn"
    alpha: float = Field(
        0.01,
        gt=0.0,
        le=10.0,
        description="α: weight of the dynamic regulariser α/2·||θ − θ_t||² (and 1/α scales h).",
    )
    evaluate: Literal["corrected", "average"] = Field(
        "corrected",
        description="the model a round's metrics evaluate: 'corrected' (the paper's server "
        "model θ^t = mean(θ_k) − h/α) or 'average' (the plain mean of the round's users' "
        "models, as the authors' released code is reported to); θ^t is broadcast either way",
    )
    alpha_scaling: Literal["uniform", "inverse_share"] = Field(
        "uniform",
        description="α per user: 'uniform' (the paper: α for everybody) or 'inverse_share' "
        "(α_k = α · mean_n / n_k, n_k the user's training samples, as the released code is "
        "reported to); h ← h − (1/m) Σ α_k (θ_k − θ^{t−1}), θ^t = mean(θ_k) − h/α",
    )

    @model_serializer(mode="wrap")
    def _without_default_variants(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Left out at their defaults: specs written before the options existed keep their
        # hashes (canonical_json writes every other default out).
        dumped = handler(self)
        if isinstance(dumped, dict):
            for key, default in (("evaluate", "corrected"), ("alpha_scaling", "uniform")):
                if dumped.get(key) == default:
                    del dumped[key]
        return dumped


MAX_PROJECTION_DIM = 1024


class MoonParams(AlgorithmParams):
    """MOON (Li, He, Song 2021): a model-contrastive loss on the representation z, the
    projection head's output when `projection_dim` > 0, else the feature extractor's."""

    name: Literal["moon"] = "moon"
    mu: float = Field(
        1.0, ge=0.0, le=100.0, description="μ: weight of the model-contrastive loss (0 = FedAvg)."
    )
    temperature: float = Field(
        0.5, gt=0.0, le=100.0, description="τ: temperature of the contrastive softmax."
    )
    projection_dim: int = Field(
        0,
        ge=0,
        le=MAX_PROJECTION_DIM,
        description="Output width of the projection head (the paper's §3.2; 256 in its §4.1): "
        "an MLP features -> d -> projection_dim with a ReLU between (d the features' width), "
        "part of the federated model; z is its output and the predictor reads it. "
        "0 = no head: z is the features.",
    )

    @property
    def projection_head_dim(self) -> int:
        return self.projection_dim

    @model_serializer(mode="wrap")
    def _without_default_projection(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Left out at 0: specs written before the field existed keep their hashes.
        dumped = handler(self)
        if isinstance(dumped, dict) and dumped.get("projection_dim") == 0:
            dumped.pop("projection_dim")
        return dumped


class FedNovaParams(AlgorithmParams):
    """FedNova (Wang et al. 2020): normalised averaging of heterogeneous local work."""

    name: Literal["fednova"] = "fednova"
    local_steps_spread: int = Field(
        0,
        ge=0,
        le=MAX_LOCAL_STEPS,
        description="Each selected user trains τ_i steps, drawn uniformly (seeded by seed, round "
        "and user) from max(1, local_steps − spread) to local_steps; 0 = every user local_steps.",
    )


class _ServerAdaptiveParams(AlgorithmParams):
    """What FedAdam and FedYogi share (Reddi et al. 2021, Algorithm 2)."""

    server_lr: float = Field(
        0.01, gt=0.0, le=10.0, description="η: the server optimiser's step size."
    )
    beta1: float = Field(
        0.9, ge=0.0, lt=1.0, description="β₁: decay of the pseudo-gradient's first moment."
    )
    beta2: float = Field(
        0.99, ge=0.0, lt=1.0, description="β₂: decay of the pseudo-gradient's second moment."
    )
    tau: float = Field(
        1e-3,
        gt=0.0,
        le=10.0,
        description="τ: adaptivity, added to √v (and v starts at τ²); larger = less adaptive.",
    )


class FedAdamParams(_ServerAdaptiveParams):
    """FedAdam (Reddi et al. 2021): Adam on the round's pseudo-gradient, at the server."""

    name: Literal["fedadam"] = "fedadam"


class FedYogiParams(_ServerAdaptiveParams):
    """FedYogi (Reddi et al. 2021): Yogi on the round's pseudo-gradient, at the server."""

    name: Literal["fedyogi"] = "fedyogi"


class FedAvgMParams(AlgorithmParams):
    """FedAvgM (Hsu et al. 2019): FedAvg with server momentum on the averaged update."""

    name: Literal["fedavgm"] = "fedavgm"
    server_momentum: float = Field(
        0.9,
        ge=0.0,
        lt=1.0,
        description="β: the server's momentum on the round's pseudo-gradient; 0 = none.",
    )
    server_lr: float = Field(
        1.0,
        gt=0.0,
        le=10.0,
        description="η_s: the server's step; η_s / (1 − β) is the effective step (FedAvg: 1).",
    )
