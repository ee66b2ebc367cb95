"""The spec's known fields for `?where=`: each dotted path with the JSON values it can hold.

Read once per registry state (`lru_cache`, keyed on the registered algorithm names) from
`ExperimentSpec`'s JSON schema, so what a filter may name is what a spec may hold: the
`algorithm` section is a discriminated union, and a field is known if any algorithm (plugins
included) has it. `where_problem` says why a clause can match no run: an unknown field (with
the nearest known ones, by `difflib` on the dotted paths and on their last names), an object
or list where one value is compared, or a value the field's type cannot hold.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from fedgen.algorithms.registry import algorithm_names
from fedgen.spec import ExperimentSpec

Scalar = str | int | float | bool | None
#: How a JSON schema type is said in a message.
_SAID = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "null": "null",
    "object": "an object",
    "array": "a list",
}
#: At most this many nearest fields are suggested.
MAX_SUGGESTIONS = 4


@dataclass(frozen=True)
class Alternative:
    """One JSON type a field may hold, limited to `values` when the schema lists them."""

    type: str | None  # None: the schema does not say (anything goes)
    values: tuple[Scalar, ...] | None = None


@dataclass(frozen=True)
class FieldShape:
    """What one dotted spec field may hold; `children` are the names under an object;
    `everywhere`: every spec has it (not only some algorithms' specs: algorithm.alpha is
    FedDyn's)."""

    alternatives: tuple[Alternative, ...]
    children: tuple[str, ...] = ()
    everywhere: bool = True


def known_fields() -> Mapping[str, FieldShape]:
    """Every dotted spec field (sections included) -> its shape, for the registry as it is."""
    return _known_fields(algorithm_names())


@lru_cache(maxsize=4)
def _known_fields(_algorithms: tuple[str, ...]) -> Mapping[str, FieldShape]:
    # The argument only keys the cache: a plugin registered later gives a fresh walk.
    schema = ExperimentSpec.model_json_schema()
    out: dict[str, FieldShape] = {}
    _walk([schema], schema.get("$defs", {}), "", out)
    out.pop("", None)
    return out


def _flatten(nodes: list[dict[str, Any]], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives of `nodes`: `$ref` resolved, `anyOf`/`oneOf` opened."""
    flat: list[dict[str, Any]] = []
    for node in nodes:
        ref = node.get("$ref")
        if isinstance(ref, str):
            flat += _flatten([defs[ref.rsplit("/", 1)[-1]]], defs)
        elif "anyOf" in node or "oneOf" in node:
            flat += _flatten(list(node.get("anyOf", ())) + list(node.get("oneOf", ())), defs)
        else:
            flat.append(node)
    return flat


def _alternative(node: dict[str, Any]) -> Alternative:
    values: tuple[Scalar, ...] | None = None
    if "const" in node:
        values = (node["const"],)
    elif isinstance(node.get("enum"), list):
        values = tuple(node["enum"])
    kind = node.get("type")
    if kind is None and "properties" in node:
        kind = "object"
    return Alternative(kind if isinstance(kind, str) else None, values)


def _walk(
    nodes: list[dict[str, Any]],
    defs: dict[str, Any],
    path: str,
    out: dict[str, FieldShape],
    everywhere: bool = True,
) -> None:
    flat = _flatten(nodes, defs)
    merged: dict[str, list[dict[str, Any]]] = {}
    objects = [n for n in flat if "properties" in n]
    for node in objects:  # an object's fields: every alternative's (the algorithms' union)
        for name, sub in node["properties"].items():
            merged.setdefault(name, []).append(sub)
    alternatives = tuple(dict.fromkeys(_alternative(n) for n in flat))
    out[path] = FieldShape(alternatives, tuple(merged), everywhere)
    for name, subs in merged.items():
        always = everywhere and all(name in n["properties"] for n in objects)
        _walk(subs, defs, f"{path}.{name}" if path else name, out, always)


def _holds(alt: Alternative, value: Scalar) -> bool:
    """Whether a field of this alternative can equal `value` (as `spec_equals` compares)."""
    if alt.type is None:
        return True
    if value is None:
        ok = alt.type == "null"
    elif isinstance(value, bool):
        ok = alt.type == "boolean"
    elif isinstance(value, int | float):
        ok = alt.type == "number" or (alt.type == "integer" and float(value).is_integer())
    else:
        ok = alt.type == "string"
    return ok and (alt.values is None or value in alt.values)


def _said(shape: FieldShape) -> str:
    """'a number', 'an integer or null', 'one of "fedavg", "fedgen"' ..."""
    listed = [v for alt in shape.alternatives if alt.type != "null" for v in alt.values or ()]
    parts = ["one of " + ", ".join(json.dumps(v) for v in dict.fromkeys(listed))] if listed else []
    for alt in shape.alternatives:
        if alt.values is None or alt.type == "null":
            parts.append(_SAID.get(alt.type or "", alt.type or "any value"))
    return " or ".join(dict.fromkeys(parts))


def _shown(value: Scalar) -> str:
    return repr(value) if isinstance(value, str) else json.dumps(value)


def nearest(field: str, fields: Mapping[str, FieldShape]) -> list[str]:
    """The known fields nearest to `field`: by the whole dotted path, then by the last name
    (`alpha` -> partition.alpha). Among paths of one last name, fields every spec has come
    before those of some algorithms only (partition.alpha before FedDyn's algorithm.alpha),
    then the shorter path."""
    last = field.rsplit(".", 1)[-1]
    by_last: dict[str, list[str]] = {}
    for path in fields:
        by_last.setdefault(path.rsplit(".", 1)[-1], []).append(path)
    found = difflib.get_close_matches(field, list(fields), n=MAX_SUGGESTIONS, cutoff=0.6)
    for name in difflib.get_close_matches(last, list(by_last), n=MAX_SUGGESTIONS, cutoff=0.7):
        found += sorted(by_last[name], key=lambda p: (not fields[p].everywhere, p.count("."), p))
    return list(dict.fromkeys(found))[:MAX_SUGGESTIONS]


def where_problem(path: tuple[str, ...], value: Scalar) -> str | None:
    """Why `field=value` can match no spec, naming the field (None: it can match)."""
    fields = known_fields()
    field = ".".join(path)
    shape = fields.get(field)
    if shape is None:
        near = nearest(field, fields)
        if near:
            return f"{field} is not a spec field; did you mean {' or '.join(near)}?"
        top = ", ".join(p for p in fields if "." not in p)
        return f"{field} is not a spec field; the spec's sections and fields are {top}"
    if any(_holds(alt, value) for alt in shape.alternatives):
        return None
    if shape.children:
        inner = "name" if "name" in shape.children else shape.children[0]
        return f"{field} is an object; did you mean {field}.{inner}?"
    note = " (search tags with tag= or q=)" if field == "tags" else ""
    return f"{field} is {_said(shape)}; {_shown(value)} cannot match{note}"
