"""`?where=field=value` on GET /runs: a dotted spec field equal to a JSON value, in SQL.

A clause is parsed once (`parse_where`) and turned into a condition on `runs.spec` for the
session's dialect (`spec_equals`), so the filter runs in the database and pagination and the
total count stay right. Values compare as the spec's JSON values: a number matches a number of
the same value whatever its spelling (32, 32.0), a string only the same string, true/false
only booleans, null only a null. A clause that could match no spec (an unknown field, a value
its type cannot hold: `field_problems`, from `lab.repository.spec_fields`) is refused. The
JSON type is checked before any cast, so a number never matches a string field (SQLite would
read 'fedgen' as 0).

On Postgres a clause is tested on `runs.spec_search` (the spec as jsonb): containment (`@>`,
which its GIN index answers) and then equality at the path. jsonb compares numbers by value and
never a number with a string, so the two say what the SQLite form says; the equality is there
because containment alone would also let a list hold the value.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, cast, func, literal, type_coerce
from sqlalchemy.dialects.postgresql import JSONB

from lab.models import Run
from lab.repository.spec_fields import where_problem
from lab.storable_text import text_problem

#: At most this many `where` clauses per request, each at most this long.
MAX_WHERE = 8
MAX_WHERE_CHARS = 300
#: A dotted field: identifiers, at most this many levels deep.
MAX_FIELD_DEPTH = 6
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_FIELD = re.compile(rf"^{_IDENT}(\.{_IDENT})*$")

Scalar = str | int | float | bool | None
# What json.loads skips around a value; stripping more (str.strip's Unicode blanks) would turn
# a string value such as "\x1c[1]" into a JSON list.
JSON_WHITESPACE = " \t\n\r"
_WS = r" \t\n\r"  # JSON_WHITESPACE, as written inside a regular expression's [...]
#: What `parse_where` accepts, as a regular expression for the API's schema: a dotted field of
#: at most MAX_FIELD_DEPTH names, `=`, and a value that is not a JSON list or object.
WHERE_PATTERN = (
    rf"^[ \t]*{_IDENT}(\.{_IDENT}){{0,{MAX_FIELD_DEPTH - 1}}}[ \t]*="
    rf"[{_WS}]*([^\[{{\x00{_WS}][^\x00]*)?$"
)


@dataclass(frozen=True)
class SpecWhere:
    """One clause: the spec at `path` equals `value` (a JSON scalar)."""

    path: tuple[str, ...]
    value: Scalar


def _value(text: str) -> Scalar:
    """A JSON scalar (`32`, `0.1`, `true`, `null`, `"32"`); anything else is the string as given."""
    try:
        value: Scalar | list[Any] | dict[str, Any] = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, list | dict):
        raise ValueError("the value must be a number, a string, true, false or null")
    if isinstance(value, str) and (problem := text_problem(value)) is not None:
        raise ValueError(f"the value {problem}")  # as in any other string the API takes
    if isinstance(value, float) and not math.isfinite(value):
        # NaN, Infinity: json.loads takes them, but no spec (JSON) holds them
        return text
    return value


def parse_where(clauses: list[str]) -> tuple[list[SpecWhere], list[str]]:
    """(parsed clauses, problems): each problem names the clause and what is wrong with it."""
    problems: list[str] = []
    if len(clauses) > MAX_WHERE:
        return [], [f"{len(clauses)} clauses; at most {MAX_WHERE}"]
    out: list[SpecWhere] = []
    for clause in clauses:
        shown = clause if len(clause) <= 60 else clause[:57] + "..."
        if len(clause) > MAX_WHERE_CHARS:
            problems.append(f"{shown!r} is {len(clause)} characters; at most {MAX_WHERE_CHARS}")
            continue
        field, sep, raw = clause.partition("=")
        field = field.strip()
        if not sep or not field:
            problems.append(f"{shown!r}: expected field=value, e.g. algorithm.gen_batch_size=32")
            continue
        if not _FIELD.match(field) or field.count(".") >= MAX_FIELD_DEPTH:
            problems.append(
                f"{shown!r}: the field must be a dotted spec field (e.g. partition.alpha), at "
                f"most {MAX_FIELD_DEPTH} levels"
            )
            continue
        try:
            value = _value(raw.strip(JSON_WHITESPACE))
        except ValueError as exc:
            problems.append(f"{shown!r}: {exc}")
            continue
        out.append(SpecWhere(tuple(field.split(".")), value))
    return out, problems


def field_problems(clauses: list[SpecWhere]) -> list[str]:
    """What makes parsed clauses unable to match any spec: an unknown field (with the nearest
    known ones), an object or list, or a value the field's type cannot hold.

    Kept apart from `parse_where`, which checks only the syntax `WHERE_PATTERN` states."""
    found = (where_problem(w.path, w.value) for w in clauses)
    return [p for p in found if p is not None]


def spec_equals(where: SpecWhere, dialect: str) -> ColumnElement[bool]:
    """SQL: the run's spec has `where.value` at `where.path` (Postgres or SQLite JSON)."""
    if dialect == "postgresql":
        return _pg_equals(where)
    return _sqlite_equals(where)


def _pg_equals(w: SpecWhere) -> ColumnElement[bool]:
    doc: object = w.value
    for part in reversed(w.path):  # {"a": {"b": value}} for a.b=value
        doc = {part: doc}
    spec = type_coerce(Run.spec_search, JSONB)
    value = cast(literal(json.dumps(w.value)), JSONB)
    return and_(spec.contains(doc), spec[w.path] == value)


def _sqlite_equals(w: SpecWhere) -> ColumnElement[bool]:
    path = "$." + ".".join(f'"{p}"' for p in w.path)  # parts are identifiers (_FIELD)
    kind = func.json_type(Run.spec, path)
    raw = func.json_extract(Run.spec, path)
    v = w.value
    if v is None:
        return kind == "null"
    if isinstance(v, bool):
        return kind == ("true" if v else "false")
    if isinstance(v, int | float):
        return and_(kind.in_(("integer", "real")), raw == literal(float(v)))
    return and_(kind == "text", raw == v)
