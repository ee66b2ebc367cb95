"""The Submit form's checks: a value, a sweep list or the tags as typed, refused with the
field's limit ("must be at least 1") before anything is sent.

The limits are the schema's, carried by `FormField` (dashboard.spec_form), so the form
refuses exactly what the API would.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dashboard.spec_form import FormField, coerce, number_text
from dashboard.spec_schema import SchemaNode


# -- checks ------------------------------------------------------------------------------
def check(f: FormField, value: Any) -> str | None:
    """Why `value` is refused for `f`, naming the limit ('must be at least 1'); None if allowed.

    The limits are the schema's (the spec's Field ge/gt/le/lt, max_length, pattern, Literals),
    so the form refuses exactly what the API would, before anything is sent.
    """
    if value is None:
        return None if f.nullable else "is required"
    if f.kind == "names":
        return check_names(f, value)
    if f.kind in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number (got {value!r})"
        if not math.isfinite(value):
            return "must be a finite number"
        if f.kind == "int" and not float(value).is_integer():
            return "must be a whole number"
        if f.minimum is not None and value < f.minimum:
            return f"must be at least {number_text(f.minimum)}"
        if f.exclusive_minimum is not None and value <= f.exclusive_minimum:
            return f"must be greater than {number_text(f.exclusive_minimum)}"
        if f.maximum is not None and value > f.maximum:
            return f"must be at most {number_text(f.maximum)}"
        if f.exclusive_maximum is not None and value >= f.exclusive_maximum:
            return f"must be less than {number_text(f.exclusive_maximum)}"
    elif f.kind == "choice":
        if value not in f.choices:
            return "must be one of " + ", ".join(map(str, f.choices))
    elif f.kind == "str":
        text = str(value)
        if f.min_length is not None and len(text) < f.min_length:
            return (
                "must not be empty"
                if f.min_length == 1
                else (f"must have at least {f.min_length} characters")
            )
        if f.max_length is not None and len(text) > f.max_length:
            return f"must have at most {f.max_length} characters (got {len(text)})"
        if f.pattern is not None and re.search(f.pattern, text) is None:
            return f"must match the pattern {f.pattern} (got {text!r})"
    return None


def _got(msg: str, value: Any) -> str:
    """`msg` naming the value refused ('must be at least 0 (got -1)'), once."""
    return msg if "(got" in msg else f"{msg} (got {value!r})"


def check_names(f: FormField, value: Any) -> str | None:
    """A count (the count's limits) or a list of names (how many, and each name's limits)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return check(replace(f, kind="int"), value)
    if not isinstance(value, list):
        return f"must be a count or comma-separated names (got {value!r})"
    if f.min_items is not None and len(value) < f.min_items:
        return f"needs at least {f.min_items} names (got {len(value)}), or a count"
    if f.max_items is not None and len(value) > f.max_items:
        return f"takes at most {f.max_items} names (got {len(value)})"
    for name in value:
        msg = check(replace(f, kind="str"), name)
        if msg is not None:
            return f"each name {_got(msg, name)}"
    return None


def check_list(f: FormField, values: list[Any]) -> str | None:
    """The first refused value of a sweep list, with the value ('must be at least 0 (got -1)')."""
    if not values:
        return "needs at least one value"
    for v in values:
        msg = check(f, v)
        if msg is not None:
            return _got(msg, v)
    return None


def read_list(text: str, f: FormField) -> tuple[list[Any], str | None]:
    """A sweep field's comma list as typed: (values, first problem or None).

    A value that does not parse stays as the text typed, so what the form shows is never
    replaced by a default; the problem names it.
    """
    items = [t.strip() for t in str(text).replace(";", ",").split(",") if t.strip()]
    values: list[Any] = []
    problem: str | None = None
    for item in items:
        try:
            values.append(coerce(item, f.kind))
        except ValueError as exc:
            values.append(item)
            problem = problem or str(exc)
    return values, problem or check_list(f, values)


def read_tags(
    text: str, tag: FormField, schema: SchemaNode | Mapping[str, Any]
) -> tuple[list[str], str | None]:
    """Comma-separated tags -> (tags, first problem naming the limit, or None)."""
    tags = [t.strip() for t in str(text).split(",") if t.strip()]
    props = SchemaNode.of(schema).properties
    most = props["tags"].max_items if "tags" in props else None
    if most is not None and len(tags) > most:
        return tags, f"at most {most} tags (got {len(tags)})"
    for t in tags:
        msg = check(tag, t)
        if msg is not None:
            return tags, f"each tag {_got(msg, t)}"
    return tags, None


def refusals(problems: Mapping[str, str]) -> str:
    """'rounds: must be at least 1' lines, one per refused field, as a markdown list."""
    return "\n".join(f"- {path}: {msg}" for path, msg in problems.items())
