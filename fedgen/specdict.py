"""Spec dictionaries: dotted fields, deep merge, flattening, fields that differ, labels.

A spec travels between the CLI, the API, the database and the dashboard as a plain
nested dict (`ExperimentSpec.model_dump(mode="json")`). Its fields are named by
dotted paths (`partition.alpha`, `algorithm.gen_batch_size`). Everything that
changes, compares or names such dicts lives here, so a sweep, a clone, the sweep
summary and the dashboard's groups all follow the same rules.

One rule is special: the algorithm. A name (`"algorithm": "fedgen"`, its default
parameters) or a mapping that names a different algorithm replaces the whole
`algorithm` block, because the old algorithm's parameters do not apply to the new
one; a mapping without a name, or with the same name, changes parameters of the
current algorithm.

Imports only the standard library (the dashboard uses this module).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fedgen.spec import ExperimentSpec

ALGORITHM = "algorithm"
# Fields that never change results; the seed is what a group of runs averages over.
NON_GROUP_FIELDS: tuple[str, ...] = ("seed", "tags", "note", "checkpoint_every")
# How labels spell the fields people read most.
SHORT_NAMES: dict[str, str] = {
    "algorithm.name": "algorithm",
    "data.name": "dataset",
    "partition.alpha": "alpha",
}


def get_dotted(spec: Mapping[str, Any], dotted: str, default: Any = None) -> Any:
    """The value at `dotted` in a nested dict, or `default` where the path is missing."""
    node: Any = spec
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def _nest(dotted: str, value: Any) -> dict[str, Any]:
    """("partition.alpha", 0.1) -> {"partition": {"alpha": 0.1}}."""
    out: Any = value
    for part in reversed(dotted.split(".")):
        out = {part: out}
    return dict(out)


def _replaces(path: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    return path == ALGORITHM and new.get("name") not in (None, old.get("name"))


def _merge_into(target: dict[str, Any], changes: Mapping[str, Any], prefix: str) -> None:
    for key, new in changes.items():
        path = f"{prefix}{key}"
        old = target.get(key)
        if path == ALGORITHM and isinstance(new, str):
            target[key] = {"name": new}
        elif isinstance(new, Mapping) and isinstance(old, dict) and not _replaces(path, old, new):
            _merge_into(old, new, f"{path}.")
        else:
            target[key] = copy.deepcopy(dict(new) if isinstance(new, Mapping) else new)


def merge(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A new dict: `changes` (nested) deep-merged over `base`; neither input is modified.

    Mappings merge key by key; any other value replaces. An algorithm given by name, or
    by a mapping naming another algorithm, replaces the whole algorithm block.
    """
    out: dict[str, Any] = copy.deepcopy(dict(base))
    _merge_into(out, changes, "")
    return out


def set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    """Set the field `dotted` of `target` in place, creating parents, by the rules of `merge`.

    `set_dotted(d, "algorithm.name", "fedavg")` on a FedGen spec drops FedGen's parameters.
    """
    _merge_into(target, _nest(dotted, value), "")


_LEAF = (str, int, float, bool, type(None), tuple)  # exact types: neither Mapping nor list


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}, "tags": ["x"]} -> {"a.b": 1, "tags": ("x",)}.

    Lists become tuples, so every value hashes; empty mappings vanish.
    """
    out: dict[str, Any] = {}
    for key, value in d.items():
        name = f"{prefix}{key}"
        if type(value) in _LEAF:  # the common case, without the slow ABC check below
            out[name] = value
        elif isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, list):
            out[name] = tuple(value)
        else:
            out[name] = value
    return out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


_PLAIN = (str, int, bool, type(None))  # equal (type, value) means equal JSON text


def _quick(value: Any) -> Any:
    """A hashable stand-in: equal stand-ins imply equal `_canonical` texts (not conversely).

    Much cheaper than the JSON text for the plain values a flattened spec holds; a float
    stands as its repr (the JSON text but for NaN and the infinities' spelling).
    """
    kind = type(value)
    if kind in _PLAIN:
        return (kind, value)
    if kind is float:
        return (kind, repr(value))
    return _canonical(value)


def _differs(values: list[Any]) -> bool:
    """Whether the values' canonical JSON texts differ: whether one differs from the first's.

    A value whose quick stand-in equals the first's has its text too; the first text that
    differs answers, so a field that varies costs a few texts, not one per value.
    """
    if not values:
        return False
    first = values[0]
    quick = _quick(first)
    text: str | None = None
    for value in values:
        if _quick(value) == quick:
            continue
        if text is None:
            text = _canonical(first)
        if _canonical(value) != text:
            return True
    return False


def _spec_dict(spec: Mapping[str, Any] | ExperimentSpec) -> Mapping[str, Any]:
    return spec if isinstance(spec, Mapping) else spec.model_dump(mode="json")


def group_fields(
    flats: Iterable[Mapping[str, Any]], ignore: Collection[str] = NON_GROUP_FIELDS
) -> list[str]:
    """Every dotted field of the flattened specs except `ignore`, sorted."""
    return sorted({f for flat in flats for f in flat if f not in ignore})


def differing_fields(
    flats: Iterable[Mapping[str, Any]],
    fields: Iterable[str] | None = None,
    ignore: Collection[str] = NON_GROUP_FIELDS,
) -> list[str]:
    """The dotted fields whose values differ among the flattened specs that have them.

    `fields`: which to consider (default: every field but `ignore`). A field a spec
    lacks (another algorithm's parameter) does not count as different. Sorted, with
    `algorithm.name` first: "algorithm=fedgen, algorithm.gen_batch_size=64".
    """
    pool = list(flats)
    candidates = group_fields(pool, ignore) if fields is None else list(fields)
    out = [f for f in candidates if _differs([d[f] for d in pool if f in d])]
    return sorted(out, key=lambda f: (f != "algorithm.name", f))


def group_key(
    spec: Mapping[str, Any] | ExperimentSpec,
    fields: Iterable[str] | None = None,
    ignore: Collection[str] = NON_GROUP_FIELDS,
) -> str:
    """Canonical JSON of a spec's dotted fields: equal keys = runs of one group.

    Default: every field but `ignore` (runs that differ only by seed, tags, note or
    checkpointing share a key); `fields` picks the fields to group by instead (a field
    a spec lacks counts as null). Loads back with `json.loads` as a flat dict.
    """
    flat = flatten(_spec_dict(spec))
    chosen = group_fields([flat], ignore) if fields is None else sorted(fields)
    body = {f: flat.get(f) for f in chosen}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), default=repr)


def value_order(values: Iterable[Any]) -> list[tuple[int, float, str]]:
    """A sort key for a row of spec values, in the order a table lists them: missing first,
    numbers by size, then text."""
    out = []
    for v in values:
        if v is None:
            out.append((0, 0.0, ""))
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out.append((1, float(v), ""))
        else:
            out.append((2, 0.0, str(v)))
    return out


def format_value(value: Any) -> str:
    """How labels show a value: floats without trailing zeros (1.0 -> "1", 0.1 -> "0.1")."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def group_label(fields: Mapping[str, Any]) -> str:
    """{"algorithm.name": "fedgen", "partition.alpha": 0.1} -> "algorithm=fedgen, alpha=0.1".

    `fields` are a group's differing fields, in the order to show; "all" when none differ.
    """
    parts = [f"{SHORT_NAMES.get(f, f)}={format_value(v)}" for f, v in fields.items()]
    return ", ".join(parts) or "all"


def group_items(
    flats: Mapping[str, Mapping[str, Any]], fields: Iterable[str] | None = None
) -> dict[str, list[str]]:
    """Item ids by group key (`group_key`), in first-seen order: the one grouping rule.

    `flats`: id -> flattened spec. Default: runs that share every field but the seed (and
    tags, note, checkpointing) form a group; `fields` picks the fields to group by instead.
    """
    chosen = None if fields is None else list(fields)
    out: dict[str, list[str]] = {}
    for item, flat in flats.items():
        out.setdefault(group_key(flat, chosen), []).append(item)
    return out


def varying_within(flats: Iterable[Mapping[str, Any]]) -> list[str]:
    """Fields (other than the seed & co.) whose values still differ inside one group.

    Empty for the default grouping; with chosen fields, the warning a page shows
    ("runs in this group also differ in partition.alpha").
    """
    return differing_fields(flats)
