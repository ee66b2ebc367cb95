"""From the Submit form's values to what is sent: one spec, or a sweep's base and grid.

`applies` says which fields the form draws for what is picked (an algorithm's parameters for
that algorithm, data.folder.* for the `folder` dataset, data.synthetic_* for `synthetic`);
`build_spec` lays single values over the server's defaults, `build_sweep` turns lists into a
base and a grid (algorithms with their own parameter grids; data.folder zipped with a swept
data.name). The fields come from `dashboard.spec_form`.

A field left at a null default is not written (`null` for a generator knob left to the
fidelity profile, data.root unset): the API gives a missing field its default, so the spec
is the same, and the YAML shows only what is set. A null the user chose where the default is
not null is kept.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from dashboard.conditional_fields import ALGORITHM, sweeps_whole, zip_sections
from dashboard.spec_form import FormField
from fedgen.specdict import get_dotted, set_dotted


def applies(f: FormField, chosen: Mapping[str, Iterable[Any]]) -> bool:
    """Whether the field is shown for the chosen values, e.g. {'algorithm.name': ['fedgen'],
    'data.name': ['folder']}: a field with `only` when its `only_of` has one of them."""
    return not f.only or bool(set(f.only) & set(chosen.get(f.only_of, ())))


def _param_of(f: FormField, name: str) -> bool:
    """Whether `f` is a parameter of the algorithm `name`."""
    return f.only_of == ALGORITHM and name in f.only


def algorithm_block(
    name: str, values: Mapping[str, Any], fields: list[FormField]
) -> dict[str, Any]:
    """The `algorithm` mapping for `name` with only the parameters that algorithm accepts."""
    block: dict[str, Any] = {"name": name}
    for f in fields:
        if _param_of(f, name) and f.form_key in values:
            if values[f.form_key] is None and f.default is None:
                continue  # missing is the same as its null default
            block[f.path.split(".", 1)[1]] = values[f.form_key]
    return block


def without_default_nulls(spec: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """`spec` less every field that is null where `defaults` has it null (nested sections
    too); a field the defaults lack, or have set, is kept as it is."""
    out: dict[str, Any] = {}
    for key, value in spec.items():
        default = defaults.get(key, ...)  # `...`: the defaults lack it
        if value is None and default is None:
            continue
        if isinstance(value, Mapping) and isinstance(default, Mapping):
            value = without_default_nulls(value, default)
        out[key] = value
    return out


def build_spec(
    values: Mapping[str, Any], fields: list[FormField], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """Single-run values (one per dotted field) over the defaults -> the nested spec to send.

    Fields not in `values` keep their default; the algorithm block holds only the chosen
    algorithm's parameters, and a section only for its values (data.folder for data.name
    'folder') is left out otherwise. Null defaults are left out (`without_default_nulls`), so
    an untouched form gives back `defaults` less its nulls: the same spec once validated.
    """
    spec: dict[str, Any] = copy.deepcopy(dict(defaults))
    name = values.get("algorithm.name", get_dotted(defaults, "algorithm.name"))
    by_path = {f.path: f for f in fields}
    for path, value in values.items():
        f = by_path.get(path)
        if value is None and f is not None and f.default is None:
            continue  # missing is the same as its null default (a field dropped when unset)
        if f is not None and sweeps_whole(f):
            if values.get(f.only_of, get_dotted(defaults, f.only_of)) not in f.only:
                continue
        if not path.startswith("algorithm."):
            set_dotted(spec, path, value)
    spec = without_default_nulls(spec, defaults)
    spec["algorithm"] = algorithm_block(name, values, fields)
    return spec


def build_sweep(
    lists: Mapping[str, list[Any]], fields: list[FormField], defaults: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Sweep values (a list per field) -> (base spec, grid of dotted field -> values).

    Fields with one value go to the base. Algorithm names and their parameters become
    a list of whole `algorithm` mappings (each algorithm with its own parameter grid),
    so e.g. fedavg x fedgen(B_G in 16, 32) is three algorithm entries. A swept data.name
    with folder among its values is zipped with data.folder (`zip_sections`).
    """
    names = lists.get("algorithm.name") or [get_dotted(defaults, "algorithm.name")]
    singles = {k: v[0] for k, v in lists.items() if len(v) == 1}
    base = build_spec({**singles, "algorithm.name": names[0]}, fields, defaults)
    grid: dict[str, list[Any]] = {
        path: vals
        for path, vals in lists.items()
        if len(vals) > 1 and not path.startswith("algorithm.")
    }
    entries: list[dict[str, Any]] = []
    for name in names:
        params = [f.form_key for f in fields if _param_of(f, name) and f.form_key in lists]
        for combo in itertools.product(*(lists[p] for p in params)):
            entries.append(algorithm_block(name, dict(zip(params, combo, strict=True)), fields))
    if len(entries) > 1:
        grid["algorithm"] = entries
    else:
        base["algorithm"] = entries[0]
    return base, zip_sections(grid, singles, fields)


def sweep_size(grid: Mapping[str, list[Any]]) -> int:
    """How many runs a grid expands to."""
    n = 1
    for vals in grid.values():
        n *= len(vals)
    return n
