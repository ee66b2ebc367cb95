"""The Submit form's conditional fields: fields that belong to some values of another field.

A field the schema marks `x-only-when` (fedgen/data_spec.py: data.synthetic_samples and
data.synthetic_classes, {"name": ["synthetic"]}) is shown for those values of its sibling
alone (`field_rule`); any other dataset accepts it unchanged, so it is simply not drawn.

One conditional section today, `data.folder` (fedgen/data_spec.py: `FolderSpec`). The spec's JSON
schema states the rule (`DataSpec`'s if/then/else: `folder` is required when `name` is
'folder' and null otherwise); `section_rules` reads it, and `dashboard.spec_form` gives the
section's fields `only=("folder",)`, `only_of="data.name"`: the same `only` that shows an
algorithm's parameters for that algorithm alone (`applies`). A field outside its values is
neither shown nor sent, so a spec without a folder is built exactly as before.

A section is one object: in a sweep its fields take one value each, and when its controlling
field is swept (`data.name` over mnist and folder) the two are zipped into one grid axis
(`zip_sections`), the section set for its own values and null for the others. The form
draws a section's fields right under the field they belong to (`beside_their_field`).

`classes` is a count or a list of names: `count_or_names` turns its schema (an anyOf of an
integer and an array of strings) into one field of kind `names`, `parse_names` reads it as
typed ('3' -> 3, 'cat, dog, bird' -> a list) and `names_allowed` states its limits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from dashboard.spec_schema import SchemaNode

ALGORITHM = "algorithm.name"  # what an `only` without another `only_of` refers to
ONLY_WHEN = "x-only-when"  # fedgen.data_spec.ONLY_WHEN: the schema's word for it
_COUNT = re.compile(r"^[+-]?\d+$")


class Conditional(Protocol):
    """What is read of a form field here (a dashboard.spec_form.FormField)."""

    @property
    def path(self) -> str: ...
    @property
    def only(self) -> tuple[Any, ...]: ...
    @property
    def only_of(self) -> str: ...


def section_rules(node: SchemaNode | Mapping[str, Any]) -> dict[str, tuple[str, tuple[Any, ...]]]:
    """{property: (controlling property, its values)} from an object schema's if/then/else.

    DataSpec: {"folder": ("name", ("folder",))}: `then` requires `folder` when `if` names a
    value of `name`, and `else` makes it null.
    """
    node = SchemaNode.of(node)
    cond = node.if_.properties if node.if_ is not None else {}
    if len(cond) != 1:
        return {}
    ((of, rule),) = cond.items()
    values = tuple(rule.enum) if rule.enum is not None else (rule.const,) if rule.has_const else ()
    nulls = {k for k, p in (node.else_.properties if node.else_ else {}).items() if p.is_null}
    required = node.then.required if node.then is not None else []
    return {k: (of, values) for k in required if k in nulls and values}


def field_rule(prop: SchemaNode | Mapping[str, Any]) -> tuple[str, tuple[Any, ...]] | None:
    """(sibling property, its values) of a property marked `x-only-when`, else None.

    data.synthetic_samples: ("name", ("synthetic",)).
    """
    rule = SchemaNode.of(prop).only_when
    if not isinstance(rule, Mapping) or len(rule) != 1:
        return None
    ((of, values),) = rule.items()
    return (str(of), tuple(values)) if isinstance(values, list) and values else None


def single_option(prop: SchemaNode | Mapping[str, Any]) -> SchemaNode:
    """The one non-null option of an `X | None` property (its object's `$ref`), else `prop`."""
    prop = SchemaNode.of(prop)
    options = prop.non_null()
    return options[0] if len(options) == 1 else prop


def count_or_names(options: Sequence[SchemaNode]) -> SchemaNode | None:
    """An `int | list[str]` property's limits as one body of type `names`, else None."""
    by_type = {str(o.type): o for o in options}
    if len(options) != 2 or set(by_type) != {"integer", "array"}:
        return None
    count, names = by_type["integer"], by_type["array"]
    item = names.items or SchemaNode()
    if item.type != "string":
        return None
    return SchemaNode(
        type="names",
        minimum=count.minimum,
        maximum=count.maximum,
        min_items=names.min_items,
        max_items=names.max_items,
        min_length=item.min_length,
        max_length=item.max_length,
        pattern=item.pattern,
    )


def parse_names(text: Any) -> int | list[str] | None:
    """A count or names as typed: '3' -> 3, 'cat, dog, bird' -> ['cat', 'dog', 'bird'];
    '' -> None (nothing entered). Not a count: every comma-separated item is a name."""
    if isinstance(text, int | list) and not isinstance(text, bool):
        return text
    raw = "" if text is None else str(text).strip()
    if not raw:
        return None
    if _COUNT.match(raw):
        return int(raw)
    return [t.strip() for t in raw.split(",") if t.strip()]


def names_text(value: Any) -> str:
    """A count or names as the text box shows it: 3 -> '3', ['cat', 'dog'] -> 'cat, dog'."""
    if value is None:
        return ""
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def names_allowed(f: Any) -> str:
    """The limits of a `names` field in words ('a count 2..1000, or 2..1000 comma-separated
    names of at most 64 characters each')."""
    count = (
        f"a count {f.minimum:g}..{f.maximum:g}" if None not in (f.minimum, f.maximum) else "a count"
    )
    many = f"{f.min_items}..{f.max_items} " if None not in (f.min_items, f.max_items) else ""
    each = f" of at most {f.max_length} characters each" if f.max_length is not None else ""
    return f"{count}, or {many}comma-separated names{each}"


def sweeps_whole(f: Conditional) -> bool:
    """Whether `f` is in a conditional section (data.folder.*, an object beside the field it
    belongs to), one value in a sweep; a plain field that belongs to a sibling's values
    (data.synthetic_samples, of data.name) is swept like any other."""
    if not f.only or f.only_of == ALGORITHM:
        return False
    return f.path.rsplit(".", 1)[0] != f.only_of.rsplit(".", 1)[0]


def beside_their_field(fields: Sequence[Any]) -> list[Any]:
    """`fields` with each conditional section's fields right after the field they belong to
    (data.folder.* under data.name), the rest in their order."""
    rest = [f for f in fields if not sweeps_whole(f)]
    owners = {f.path for f in rest}
    out: list[Any] = []
    for f in rest:
        out += [f, *(g for g in fields if sweeps_whole(g) and g.only_of == f.path)]
    return out + [g for g in fields if sweeps_whole(g) and g.only_of not in owners]


def zip_sections(
    grid: Mapping[str, list[Any]], values: Mapping[str, Any], fields: Sequence[Conditional]
) -> dict[str, list[Any]]:
    """A sweep's grid with each swept controlling field zipped with its section.

    `data.name` over [mnist, folder] with the folder's `values` becomes the axis
    `data.name,data.folder`: [[mnist, None], [folder, {path, classes, ...}]], so every
    combination is valid (fedgen.sweep: a key naming several fields is one axis).
    """
    out = dict(grid)
    sections = {f.path.rsplit(".", 1)[0]: (f.only_of, f.only) for f in fields if sweeps_whole(f)}
    for section, (of, only) in sections.items():
        if of not in out or not set(only) & set(out[of]):
            continue
        block = {
            f.path.rsplit(".", 1)[1]: values[f.path]
            for f in fields
            if f.path.startswith(f"{section}.") and f.path in values
        }
        out[f"{of},{section}"] = [[v, block if v in only else None] for v in out.pop(of)]
    return out
