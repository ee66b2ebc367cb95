"""One declaration per model: what it accepts, what it produces, what it weighs, how it batches.

Every classifier a spec may name (`model.name`) is a `ModelDecl` (`fedgen.models.decl`)
registered here: the built-ins (`fedgen.models.builtin`: `official-cnn`, `mcmahan-cnn`,
`resnet18`, `cifar-cnn`, `mlr`) at import, then plugins through `register_model` (each entry
point of group `fedgen.models`, loaded by the look-ups below on first use). The spec's `model.name` field and its JSON schema, the
model-vs-dataset shape check, the checkpoint-size estimate (`fedgen.sizes`), FedGen's
generator width, `execution: auto` and `build_model` all read this registry.

This module imports neither torch nor fedgen.spec (both sit above it): `fedgen validate` and
the API read the declarations without loading torch. The builder is therefore named as ``"module:function"``
(imported when a run builds the model) or given as a callable.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from fedgen.models.builtin import BUILTINS
from fedgen.models.decl import (
    ModelDecl,
)
from fedgen.plugin_loader import PluginRecord, load_group

__all__ = [
    "describe",
    "get_model",
    "load_plugins",
    "model_names",
    "models",
    "register_model",
    "unregister_model",
]

_lock = threading.RLock()
_registry: dict[str, ModelDecl] = {}


def _register_entry_point(obj: Any, source: str) -> str:
    """Register what a `fedgen.models` entry point resolved to (a ModelDecl, or a
    zero-argument callable returning one) as coming from distribution `source`."""
    model = obj() if callable(obj) and not isinstance(obj, ModelDecl) else obj
    if not isinstance(model, ModelDecl):
        raise TypeError(f"expected a ModelDecl, got {type(model).__name__}")
    return register_model(dataclasses.replace(model, source=source)).name


def load_plugins(*, force: bool = False) -> tuple[PluginRecord, ...]:
    """The installed plugins of group `fedgen.models`, registered once per process (again
    with `force`): every look-up below asks first, so every process sees the same models."""
    return load_group("fedgen.models", _register_entry_point, force=force)


def register_model(decl: ModelDecl) -> ModelDecl:
    """Make `decl` known by its name; registering the same declaration again is a no-op.

    Raises
    ------
    ValueError
        Another declaration already has this name (a plugin cannot replace a built-in).
    """
    if not isinstance(decl, ModelDecl):
        raise TypeError(f"register_model expects a ModelDecl, got {type(decl).__name__}")
    with _lock:
        old = _registry.get(decl.name)
        if old is not None and old != decl:
            raise ValueError(f"model {decl.name!r} is already registered (by {old.source})")
        _registry[decl.name] = decl
    return decl


def unregister_model(name: str) -> None:
    """Forget a model (tests)."""
    with _lock:
        _registry.pop(name, None)


def get_model(name: str) -> ModelDecl:
    """The declaration of `name`; KeyError naming the registered ones if unknown."""
    load_plugins()
    try:
        return _registry[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; registered: {', '.join(model_names())}") from None


def model_names() -> tuple[str, ...]:
    """Every registered model, built-ins first, then the installed plugins'."""
    load_plugins()
    return tuple(_registry)


def models() -> tuple[ModelDecl, ...]:
    """Every registered declaration, in `model_names` order."""
    load_plugins()
    return tuple(_registry.values())


def describe(decl: ModelDecl) -> dict[str, Any]:
    """A declaration's plain fields (listings)."""
    return {
        "name": decl.name,
        "label": decl.label,
        "inputs": decl.inputs,
        "norms": list(decl.norms),
        "batching": decl.batching,
        "source": decl.source,
    }


# The built-ins first: a plugin can neither precede nor shadow them.
for _decl in BUILTINS:
    register_model(_decl)
