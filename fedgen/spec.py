"""The experiment spec: one pydantic model that describes a run completely.

`ExperimentSpec` is defined here once and shared by the CLI, the REST API, the
worker and the dashboard form. Every numeric field carries an explicit bound so
that no spec can exhaust a worker by accident, and every error names the field,
the value and the limit. `spec_hash` gives a stable identity (key order and
defaults written out or left implicit do not change it).

Behavioural differences between the FedGen paper and its official code
("fidelity knobs") are declared once in `fedgen.knobs`; `with_knobs(home)` adds
each knob's field to the spec section it lives in (`FidelitySpec`, FedGen's
`FedGenParams`, `PartitionSpec`, `ModelSpec`, the top level). `fedgen.fidelity`
resolves them against `fidelity.profile`; docs/fidelity.md has the table.

The `data` section lives in `fedgen.data_spec`, the hard limits, the strict base model and
`CrossFieldError` in `fedgen.spec_base` (import them from there). The `algorithm` section is
every registered params class (`fedgen.algorithms.registry`); the built-ins' classes and
their base `AlgorithmParams` live in `fedgen.algorithms.params`, below the registry (import
them from there): declarations flow up into the spec, never back.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    GetJsonSchemaHandler,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError

from fedgen.algorithms.params import (
    AlgorithmParams,
    FedAvgParams,
)
from fedgen.algorithms.registry import AlgorithmField, sharing_predictor
from fedgen.data.registry import get_dataset
from fedgen.data_spec import DataSpec
from fedgen.execution_spec import (
    BATCH_CLIENTS_FIELD,
    EXECUTION_FIELD,
    BatchClients,
    Execution,
    drop_defaults,
)
from fedgen.knobs import knobs_in, with_knobs
from fedgen.models.registry import get_model, model_names, models
from fedgen.spec_base import (
    MAX_BATCH,
    MAX_LOCAL_STEPS,
    MAX_ROUNDS,
    MAX_SEED,
    MAX_USERS,
    MAX_USERS_PER_ROUND,
    CrossFieldError,
    StrictModel,
)

__all__ = [
    "NOT_FINITE",
    "AlgorithmSpec",
    "ExperimentSpec",
    "FidelitySpec",
    "ModelSpec",
    "PartitionSpec",
    "SpecError",
    "format_validation_error",
    "load_spec",
    "load_spec_data",
    "parse_spec",
]

M = TypeVar("M", bound=BaseModel)


def _registered_model(name: str) -> str:
    if name not in model_names():
        raise PydanticCustomError(
            "unknown_model",
            "unknown model {name}; registered: {names}",
            {"name": repr(name), "names": ", ".join(model_names())},
        )
    return name


def model_name_help() -> str:
    """Every registered model in words ("`resnet18`: ResNet-18 for 32x32 inputs, ... (inputs:
    32x32 images (CIFAR))"), from the registry: what the schema's `model.name` says and
    the Submit form shows, plugins' models included."""
    lines = []
    for decl in models():
        what = decl.description or decl.label
        lines.append(f"`{decl.name}`: {what} (inputs: {decl.inputs})")
    return "; ".join(lines) + ". The last linear layer is the predictor."


class _ModelEnum:
    """The JSON schema of a model name: an enum of the names registered when it is asked for
    (built-ins and plugins), not a fixed list, and each one's declaration in words."""

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        schema.update(type="string", enum=list(model_names()), description=model_name_help())
        return schema


#: A registered model's name (fedgen.models.registry): validated, and listed in the schema.
ModelName = Annotated[str, AfterValidator(_registered_model), _ModelEnum()]


@with_knobs("partition")
class PartitionSpec(StrictModel):
    """How the training data is split over users (reference §2.1-2.3)."""

    num_users: int = Field(
        20,
        ge=1,
        le=MAX_USERS,
        description="Users the training data is split over (synthetic-fedprox: users generated).",
    )
    alpha: float = Field(
        0.1,
        gt=0.0,
        le=1000.0,
        description="Dirichlet concentration; smaller = more heterogeneous. Not used by the "
        "datasets whose users are given (celeba's groups; synthetic-fedprox, heterogeneous by "
        "construction: data.fedprox_alpha and fedprox_beta), nor sampling_ratio and min_samples.",
    )
    sampling_ratio: float = Field(
        0.5,
        gt=0.0,
        le=1.0,
        description="Fraction of each class used, capped per user as in the official split.",
    )
    min_samples: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="Re-draw the split until every user holds at least this many samples. "
        "None = the official value: 10 x classes for EMNIST letters (260), else 10.",
    )
    max_redraws: int = Field(
        1000, ge=1, le=100_000, description="Give up after this many Dirichlet re-draws."
    )
    data_seed: int = Field(
        42,
        ge=0,
        le=MAX_SEED,
        description="Seeds the split alone, independent of `seed`. With draws 'official' it seeds "
        "both of the official script's generators (Python random and NumPy's legacy "
        "RandomState): 42, the script's own seed, reproduces the official split sample for "
        "sample; another value keeps the official procedure and draw order with other draws.",
    )
    celebs_per_user: int = Field(
        10, ge=1, le=1000, description="CelebA only: celebrities grouped into one user."
    )
    val_fraction: float = Field(
        0.0,
        ge=0.0,
        le=0.5,
        description="Share of each user's training samples held out as its validation data "
        "(drawn with data_seed; never trained on): the run then reports val_acc and val_loss "
        "of the global model on the users' validation data every round, and the statistic "
        "val_best. 0 = no validation data.",
    )


@with_knobs("model")
class ModelSpec(StrictModel):
    """The classifier, split into `features` and `predictor` (last linear layer): a model
    registered in `fedgen.models.registry` (built-ins: `fedgen.models.builtin`)."""

    name: ModelName = "official-cnn"
    norm: Literal["group", "batch"] | None = Field(
        None,
        description="Normalisation layers of a model that has the choice (resnet18: 'group', "
        "GroupNorm of 2 groups, Hsieh et al. 2020; or 'batch'). None = the model's default.",
    )

    @model_validator(mode="after")
    def _norm_is_the_models(self) -> ModelSpec:
        norms = get_model(self.name).norms
        if self.norm is not None and self.norm not in norms:
            raise CrossFieldError(
                ("norm",),
                f"model {self.name} has no norm choice"
                if not norms
                else f"model {self.name} takes norm {' or '.join(norms)}, not {self.norm}",
            )
        return self

    @model_serializer(mode="wrap")
    def _without_default_norm(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Left out when unset: specs written before the field existed keep their hashes.
        dumped = handler(self)
        if isinstance(dumped, dict) and dumped.get("norm") is None:
            dumped.pop("norm", None)
        return dumped

    @property
    def resolved_norm(self) -> str:
        """`norm`, or the model's default ('none' for a model without the choice)."""
        return self.norm if self.norm is not None else get_model(self.name).default_norm()


# Discriminated on `name` over every registered params class, plugins' included
# (`fedgen.algorithms.registry`: validation and JSON schema follow the registry).
AlgorithmSpec = Annotated[AlgorithmParams, AlgorithmField]


@with_knobs("fidelity")
class FidelitySpec(StrictModel):
    """Paper vs official-code behaviour. Every knob left None takes the profile's value.

    The knobs every algorithm shares are fields here (declared in `fedgen.knobs`);
    see docs/fidelity.md for each knob's provenance.
    """

    profile: Literal["paper", "official"] = "official"


@with_knobs("run")
class ExperimentSpec(StrictModel):
    """A complete, reproducible description of one federated run."""

    data: DataSpec = DataSpec()
    partition: PartitionSpec = PartitionSpec()
    model: ModelSpec = ModelSpec()
    algorithm: AlgorithmSpec = FedAvgParams()
    fidelity: FidelitySpec = FidelitySpec()
    share: Literal["all", "predictor"] = Field(
        "all", description="Send the whole model, or only the predictor (paper §3.3, Table 4)."
    )
    rounds: int = Field(200, ge=1, le=MAX_ROUNDS)
    users_per_round: int = Field(
        10, ge=1, le=MAX_USERS_PER_ROUND, description="Users sampled to train each round."
    )
    local_steps: int = Field(
        20, ge=1, le=MAX_LOCAL_STEPS, description="T: SGD steps per selected user."
    )
    batch_size: int = Field(32, ge=1, le=MAX_BATCH)
    lr: float = Field(0.01, gt=0.0, le=10.0)
    eval_batch_size: int = Field(2048, ge=1, le=65_536)
    seed: int = Field(
        0, ge=0, le=MAX_SEED, description="Model init, user sampling, batches, generator noise."
    )
    device: str = Field("cpu", pattern=r"^(cpu|cuda(:\d{1,2})?)$")
    execution: Execution = EXECUTION_FIELD
    batch_clients: BatchClients = BATCH_CLIENTS_FIELD
    checkpoint_every: int = Field(50, ge=0, le=MAX_ROUNDS, description="0 = only at the end.")
    tags: list[Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^\x00]*$")]] = Field(
        default_factory=list, max_length=32
    )
    note: str = Field("", max_length=10_000, pattern=r"^[^\x00]*$")

    @model_validator(mode="before")
    @classmethod
    def _move_legacy_fedgen_knobs(cls, data: Any) -> Any:
        # Specs stored before the FedGen-only knobs moved from `fidelity` to `algorithm`:
        # unset ones (None) are dropped, set ones move to a FedGen algorithm section; any
        # other stays and is reported as an unknown field.
        if not isinstance(data, dict) or not isinstance(data.get("fidelity"), dict):
            return data
        fid, algo = dict(data["fidelity"]), data.get("algorithm")
        algo = dict(algo) if isinstance(algo, dict) else algo
        moved = False
        for knob in knobs_in("fedgen"):
            if knob.name not in fid:
                continue
            if fid[knob.name] is None:
                del fid[knob.name]
            elif isinstance(algo, dict) and algo.get("name") == "fedgen":
                algo.setdefault(knob.name, fid.pop(knob.name))
            else:
                continue
            moved = True
        if not moved:
            return data
        out = {**data, "fidelity": fid}
        if algo is not None:
            out["algorithm"] = algo
        return out

    @model_serializer(mode="wrap")
    def _without_default_execution(self, handler: SerializerFunctionWrapHandler) -> Any:
        # At their defaults these fields are left out: old specs keep their hashes.
        return drop_defaults(handler(self))

    @model_validator(mode="after")
    def _check_consistency(self) -> ExperimentSpec:
        if self.users_per_round > self.partition.num_users:
            raise CrossFieldError(
                ("users_per_round", "partition.num_users"),
                f"users_per_round={self.users_per_round} exceeds partition.num_users="
                f"{self.partition.num_users}",
            )
        self._check_model_inputs()
        if self.share == "predictor" and self.algorithm.name not in sharing_predictor():
            raise CrossFieldError(
                ("share", "algorithm.name"),
                f"share='predictor' is supported by {_and(sharing_predictor())}, "
                f"not {self.algorithm.name}",
            )
        return self

    def _check_model_inputs(self) -> None:
        """The model must take the dataset's input shape (and FedDF's proxy's)."""
        decl = get_model(self.model.name)
        shape = get_dataset(self.data.name).input_shape(self.data)
        why = decl.mismatch(shape)
        if why is not None:
            raise CrossFieldError(
                ("model.name", "data.name"), f"{why} (data.name={self.data.name})"
            )
        proxy = getattr(self.algorithm, "proxy", None)
        if isinstance(proxy, str) and proxy != "heldout":
            pshape = get_dataset(proxy).input_shape(self.data)
            if pshape != shape:
                raise CrossFieldError(
                    ("algorithm.proxy", "data.name"),
                    f"proxy {proxy} has {'x'.join(map(str, pshape))} inputs, data.name="
                    f"{self.data.name} has {'x'.join(map(str, shape))}: the model takes one shape",
                )

    # -- identity ------------------------------------------------------------
    def canonical_json(self) -> str:
        """The spec with every default written out, keys sorted, no whitespace."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    def spec_hash(self) -> str:
        """A stable sha256 of the canonical form (first 16 hex digits)."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]

    def result_hash(self) -> str:
        """Like `spec_hash` but ignoring fields that cannot change results (tags, note, checkpoints)."""
        body = self.model_dump(mode="json", exclude={"tags", "note", "checkpoint_every"})
        return hashlib.sha256(
            json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()[:16]


def _and(names: tuple[str, ...]) -> str:
    """('a', 'b', 'c') -> 'a, b and c'."""
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


class SpecError(ValueError):
    """A spec that does not validate; `errors` lists (field, message) pairs."""

    def __init__(self, errors: list[tuple[str, str]], source: str = "spec") -> None:
        self.errors = errors
        lines = "\n".join(f"  {loc}: {msg}" for loc, msg in errors)
        super().__init__(f"invalid {source}:\n{lines}")


NOT_FINITE = "{value} is not allowed (a finite number is required)"


def _json_float(value: Any) -> str:
    """NaN, Infinity, -Infinity: how JSON (Python's json module) spells a non-finite float."""
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return "NaN" if isinstance(value, float) and math.isnan(value) else repr(value)


def format_validation_error(exc: ValidationError) -> list[tuple[str, str]]:
    """Turn pydantic's error list into (dotted field, message with value and limit) pairs."""
    out: list[tuple[str, str]] = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        cross = (err.get("ctx") or {}).get("error")
        if isinstance(cross, CrossFieldError):
            at = loc + "." if loc != "(root)" else ""
            out.extend((at + f, str(cross)) for f in cross.fields)
            continue
        if err["type"] == "finite_number":  # any float field (allow_inf_nan=False on StrictModel)
            out.append((loc, NOT_FINITE.format(value=_json_float(err.get("input")))))
            continue
        msg = err["msg"]
        if err["type"] not in ("missing", "extra_forbidden") and "input" in err:
            shown = repr(err["input"])
            if len(shown) > 80:
                shown = shown[:77] + "..."
            msg = f"{msg} (got {shown})"
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        out.append((loc, msg))
    return out


def _integral_floats_as_ints(value: Any) -> Any:
    """`3.0` -> `3` throughout a JSON value (a float field still takes an int)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral_floats_as_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral_floats_as_ints(v) for v in value]
    return value


def parse_spec(data: Any, source: str = "spec", *, strict: bool = False) -> ExperimentSpec:
    """Validate a mapping into an ExperimentSpec, raising SpecError with field-level messages.

    `strict`: no coercion between JSON types (no `false` for an integer, no "10" for a
    number), as the API's JSON schema says; files keep YAML's looser reading.
    """
    if not isinstance(data, dict):
        raise SpecError([("(root)", f"expected a mapping, got {type(data).__name__}")], source)
    if strict:  # JSON Schema counts 3.0 as an integer; pydantic's strict mode does not
        data = _integral_floats_as_ints(data)
    try:
        # The context carries `strict` into the algorithm section (validated by the registry).
        return ExperimentSpec.model_validate(data, strict=strict, context={"strict": strict})
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc), source) from None


def load_spec_data(path: str | Path) -> Any:
    """Read a YAML or JSON file (JSON is valid YAML, but errors read better per format)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise SpecError([("(file)", f"cannot read {p}: {exc.strerror}")], str(p)) from None
    try:
        if p.suffix == ".json":
            return json.loads(text)
        # An empty file is the empty spec: every default (as `{"spec": {}}` over REST).
        data = yaml.safe_load(text)
        return {} if data is None else data
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise SpecError(
            [("(file)", f"not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {exc}")], str(p)
        ) from None


def load_spec(path: str | Path) -> ExperimentSpec:
    """Load and validate a spec file (YAML or JSON)."""
    return parse_spec(load_spec_data(path), str(path))
