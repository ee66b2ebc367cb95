"""One declaration per algorithm: the `AlgorithmDecl` everything else derives from.

A declaration names an algorithm once: its spec name, display label, parameter class
(the spec's `algorithm` section), the class that runs it (an import path, loaded only
when a run builds it, so `fedgen validate` never loads torch), its Compare colour, what
it can share (`share: all | predictor`), its CPU cost for the study estimates, the
paper's label where the paper has one, and whether its clients can run batched. The
spec's discriminated `algorithm` field and its JSON schema, the runner, `fedgen.paper`,
`fedgen.studies`, the dashboard's form and Compare colours, the benches and the tests' parameter lists all read this registry.

Built-ins are declared in `fedgen.algorithms.builtin`; plugins (entry-point group
`fedgen.algorithms`, see `fedgen.plugins`) are added on first use of `algorithms()`.
"""

from __future__ import annotations

import importlib
import math
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import Field, GetCoreSchemaHandler, GetJsonSchemaHandler, TypeAdapter
from pydantic_core import core_schema

if TYPE_CHECKING:
    from fedgen.algorithms.base import Algorithm
    from fedgen.algorithms.context import RunContext
    from fedgen.spec import AlgorithmParams

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
    algorithm_cls: str | type[Algorithm[Any]]
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

    def load_class(self) -> type[Algorithm[Any]]:
        """The algorithm class (imports its module on first use: torch)."""
        if not isinstance(self.algorithm_cls, str):
            return self.algorithm_cls
        module, _, attr = self.algorithm_cls.partition(":")
        cls: type[Algorithm[Any]] = getattr(importlib.import_module(module), attr)
        return cls


class RegistryError(ValueError):
    """A declaration that cannot be registered (bad field, duplicate name or class)."""


_lock = threading.RLock()
_decls: dict[str, AlgorithmDecl] = {}
_adapter: TypeAdapter[Any] | None = None
_builtins_loaded = False


def _check(decl: AlgorithmDecl) -> None:
    from fedgen.spec import AlgorithmParams

    if not NAME_PATTERN.match(decl.name):
        raise RegistryError(f"algorithm name {decl.name!r} must match {NAME_PATTERN.pattern}")
    if decl.name in _decls:
        raise RegistryError(
            f"algorithm {decl.name!r} is already registered (by {_decls[decl.name].source})"
        )
    if not (isinstance(decl.params_cls, type) and issubclass(decl.params_cls, AlgorithmParams)):
        raise RegistryError(f"{decl.name}: params_cls must subclass fedgen.spec.AlgorithmParams")
    name_field = decl.params_cls.model_fields.get("name")
    if name_field is None or name_field.default != decl.name:
        raise RegistryError(
            f"{decl.name}: {decl.params_cls.__name__}.name must default to {decl.name!r} "
            f'(name: Literal["{decl.name}"] = "{decl.name}")'
        )
    taken = {d.params_cls.__name__: d.name for d in _decls.values()}
    if decl.params_cls.__name__ in taken:
        raise RegistryError(
            f"{decl.name}: a params class named {decl.params_cls.__name__} is already "
            f"registered (by {taken[decl.params_cls.__name__]}); the JSON schema names it"
        )
    if isinstance(decl.algorithm_cls, str) and ":" not in decl.algorithm_cls:
        raise RegistryError(f"{decl.name}: algorithm_cls must be 'module:Class' or a class")
    if not decl.label.strip() or len(decl.label) > 40:
        raise RegistryError(f"{decl.name}: label must be 1 to 40 characters")
    if not COLOUR_PATTERN.match(decl.colour):
        raise RegistryError(f"{decl.name}: colour {decl.colour!r} must be '#RRGGBB'")
    if not (math.isfinite(decl.ms_per_round) and decl.ms_per_round > 0):
        raise RegistryError(
            f"{decl.name}: ms_per_round (the study estimates' cost model) must be a positive "
            f"number, got {decl.ms_per_round!r}"
        )
    if "all" not in decl.shares or not decl.shares <= {"all", "predictor"}:
        raise RegistryError(f"{decl.name}: shares must hold 'all' and may add 'predictor'")


def register_algorithm(decl: AlgorithmDecl) -> AlgorithmDecl:
    """Add `decl`; RegistryError when a field is invalid or the name is taken (registering an
    equal declaration again is a no-op)."""
    with _lock:
        if decl.source != BUILTIN:
            _ensure_builtins()  # a plugin may not take a built-in's name
        if _decls.get(decl.name) == decl:
            return decl
        _check(decl)
        _decls[decl.name] = decl
        global _adapter
        _adapter = None
    return decl


def _ensure_builtins() -> None:
    global _builtins_loaded
    with _lock:
        if not _builtins_loaded:
            _builtins_loaded = True
            importlib.import_module("fedgen.algorithms.builtin")


def _ensure_all() -> None:
    _ensure_builtins()
    from fedgen.plugins import load as load_plugins

    load_plugins()


def builtin_algorithms() -> tuple[AlgorithmDecl, ...]:
    """The algorithms this repository declares, in declaration order (no plugins loaded)."""
    _ensure_builtins()
    with _lock:
        return tuple(d for d in _decls.values() if d.source == BUILTIN)


def algorithms() -> tuple[AlgorithmDecl, ...]:
    """Every registered algorithm: built-ins first, then the installed plugins'."""
    _ensure_all()
    with _lock:
        return tuple(_decls.values())


def algorithm_names() -> tuple[str, ...]:
    """The spec names of every registered algorithm (`algorithm.name` takes these)."""
    return tuple(d.name for d in algorithms())


def get_algorithm(name: str) -> AlgorithmDecl:
    """The declaration of `name`; KeyError naming the registered ones otherwise."""
    found = {d.name: d for d in algorithms()}.get(name)
    if found is None:
        raise KeyError(f"unknown algorithm {name!r}; registered: {', '.join(algorithm_names())}")
    return found


def find_algorithm(name: str | None) -> AlgorithmDecl | None:
    """The declaration of `name`, or None (a name from an old run or an absent plugin)."""
    return {d.name: d for d in algorithms()}.get(str(name))


def label(name: str) -> str:
    """The display label ("FedDistill+"); an unknown name is shown as it is."""
    found = find_algorithm(name)
    return found.label if found else name


def sharing_predictor() -> tuple[str, ...]:
    """Names of the algorithms that can share only the predictor (`share: predictor`)."""
    return tuple(d.name for d in algorithms() if "predictor" in d.shares)


def params_adapter() -> TypeAdapter[Any]:
    """The discriminated union (on `name`) of every registered params class, rebuilt when
    the registry changes."""
    global _adapter
    decls = algorithms()
    with _lock:
        if _adapter is None:
            classes = tuple(d.params_cls for d in decls)
            union: Any = Union[classes] if len(classes) > 1 else classes[0]  # noqa: UP007
            _adapter = TypeAdapter(Annotated[union, Field(discriminator="name")])
        return _adapter


class AlgorithmField:
    """Pydantic metadata for the spec's `algorithm` field: validate by `name` against the
    registry as it is now (plugins included), and list every registered params class in
    the JSON schema (`oneOf` with a `discriminator` mapping, as a static union would).

    `parse_spec(strict=True)` passes `context={"strict": True}`; the variant then
    validates strictly as well.
    """

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def validate(value: Any, info: core_schema.ValidationInfo) -> Any:
            context = info.context if isinstance(info.context, dict) else {}
            return params_adapter().validate_python(
                value, strict=bool(context.get("strict")) or None, context=info.context
            )

        def serialize(value: Any, info: core_schema.SerializationInfo) -> Any:
            return value.model_dump(mode=info.mode, round_trip=info.round_trip)

        return core_schema.with_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(
                serialize, info_arg=True
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        out: dict[str, Any] = handler(params_adapter().core_schema)
        return out


def snapshot() -> dict[str, AlgorithmDecl]:
    """The registry's contents (tests restore it with `restore`)."""
    _ensure_all()
    with _lock:
        return dict(_decls)


def restore(saved: dict[str, AlgorithmDecl]) -> None:
    """Put back what `snapshot` returned (for tests that register algorithms)."""
    global _adapter
    with _lock:
        _decls.clear()
        _decls.update(saved)
        _adapter = None


__all__ = [
    "build_algorithm",
    "BUILTIN",
    "AlgorithmDecl",
    "AlgorithmField",
    "RegistryError",
    "algorithm_names",
    "algorithms",
    "builtin_algorithms",
    "find_algorithm",
    "get_algorithm",
    "label",
    "params_adapter",
    "register_algorithm",
    "sharing_predictor",
]


def build_algorithm(ctx: RunContext) -> Algorithm[Any]:
    """The algorithm `ctx.spec.algorithm` names, given its parameters.

    The spec's `algorithm` field validates against the registered params classes by
    `name`, and each registered class is generic in exactly its params class.
    """
    params = ctx.spec.algorithm
    return get_algorithm(params.name).load_class()(ctx, params)
