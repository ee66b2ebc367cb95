"""One declaration per algorithm: the `AlgorithmDecl` everything else derives from.

A declaration names an algorithm once: its spec name, display label, parameter class
(the spec's `algorithm` section), the class that runs it (an import path, loaded only
when a run builds it, so `fedgen validate` never loads torch), its Compare colour, what
it can share (`share: all | predictor`), its CPU cost for the study estimates, the
paper's label where the paper has one, and whether its clients can run batched. The
spec's discriminated `algorithm` field and its JSON schema, the runner, `fedgen.paper`,
`fedgen.studies`, the dashboard's form and Compare colours, the benches and the tests' parameter lists all read this registry.

A declaration is an `AlgorithmDecl` (`fedgen.algorithms.decl`). The built-ins
(`fedgen.algorithms.builtin`) are registered when this module is imported; plugins (entry-point
group `fedgen.algorithms`, see `fedgen.plugins`) on first use of `algorithms()`. The spec sits
above this module and the algorithm classes (torch) above that: `build_algorithm` is
`fedgen.algorithms.base`'s.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from typing import Annotated, Any, Union

from pydantic import Field, GetCoreSchemaHandler, GetJsonSchemaHandler, TypeAdapter
from pydantic_core import core_schema

from fedgen.algorithms.builtin import BUILTINS
from fedgen.algorithms.decl import (
    BUILTIN,
    COLOUR_PATTERN,
    NAME_PATTERN,
    AlgorithmDecl,
)
from fedgen.algorithms.params import AlgorithmParams
from fedgen.plugin_loader import PluginRecord, load_group


class RegistryError(ValueError):
    """A declaration that cannot be registered (bad field, duplicate name or class)."""


_lock = threading.RLock()
_decls: dict[str, AlgorithmDecl] = {}
_adapter: TypeAdapter[Any] | None = None


def _check(decl: AlgorithmDecl) -> None:
    if not NAME_PATTERN.match(decl.name):
        raise RegistryError(f"algorithm name {decl.name!r} must match {NAME_PATTERN.pattern}")
    if decl.name in _decls:
        raise RegistryError(
            f"algorithm {decl.name!r} is already registered (by {_decls[decl.name].source})"
        )
    if not (isinstance(decl.params_cls, type) and issubclass(decl.params_cls, AlgorithmParams)):
        raise RegistryError(
            f"{decl.name}: params_cls must subclass fedgen.algorithms.params.AlgorithmParams"
        )
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
        if _decls.get(decl.name) == decl:
            return decl
        _check(decl)
        _decls[decl.name] = decl
        global _adapter
        _adapter = None
    return decl


def _register_entry_point(obj: Any, source: str) -> str:
    """Register what a `fedgen.algorithms` entry point resolved to (an AlgorithmDecl, or a
    zero-argument callable returning one) as coming from distribution `source`."""
    decl = obj() if callable(obj) and not isinstance(obj, AlgorithmDecl) else obj
    if not isinstance(decl, AlgorithmDecl):
        raise TypeError(f"expected an AlgorithmDecl, got {type(decl).__name__}")
    return register_algorithm(dataclasses.replace(decl, source=source)).name


def load_plugins(*, force: bool = False) -> tuple[PluginRecord, ...]:
    """The installed plugins of group `fedgen.algorithms`, registered once per process (again
    with `force`): every look-up below asks first, so every process sees the same
    algorithms."""
    return load_group("fedgen.algorithms", _register_entry_point, force=force)


def builtin_algorithms() -> tuple[AlgorithmDecl, ...]:
    """The algorithms this repository declares, in declaration order (no plugins loaded)."""
    with _lock:
        return tuple(d for d in _decls.values() if d.source == BUILTIN)


def algorithms() -> tuple[AlgorithmDecl, ...]:
    """Every registered algorithm: built-ins first, then the installed plugins'."""
    load_plugins()
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
    load_plugins()
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
    "AlgorithmField",
    "RegistryError",
    "algorithm_names",
    "algorithms",
    "builtin_algorithms",
    "find_algorithm",
    "get_algorithm",
    "label",
    "load_plugins",
    "params_adapter",
    "register_algorithm",
    "restore",
    "sharing_predictor",
    "snapshot",
]


# The built-ins first: a plugin may not take a built-in's name.
for _decl in BUILTINS:
    register_algorithm(_decl)
