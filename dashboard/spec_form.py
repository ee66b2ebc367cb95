"""The Submit form's model, built from the spec's own JSON schema and defaults; pure builders.

One set of defaults: the form starts from `GET /spec/defaults` (the spec an empty
submission gets, equal to `fedgen validate` of an empty file) and takes its fields from
`GET /spec/schema`: choices from the schema's enums (the spec's Literals), bounds from its
Fields, help from their descriptions. An untouched form therefore submits exactly the
defaults. Values are keyed by dotted spec paths (`partition.alpha`); algorithm parameters
are `algorithm.<param>` and belong to the algorithms listed in `FormField.only`.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fedgen.spec import ALGORITHM_NAMES, DATASET_NAMES
from fedgen.specdict import get_dotted, set_dotted

# The Runs page's filters (the form itself takes its choices from the schema).
DATASETS = list(DATASET_NAMES)
ALGORITHMS = list(ALGORITHM_NAMES)

# Fields shown in the form's columns; every other spec field is under "Advanced".
MAIN: dict[str, str] = {
    "data.name": "data",
    "data.synthetic_samples": "data",
    "partition.num_users": "data",
    "partition.alpha": "data",
    "partition.sampling_ratio": "data",
    "algorithm.name": "algorithm",
    "fidelity.profile": "algorithm",
    "rounds": "run",
    "users_per_round": "run",
    "local_steps": "run",
    "batch_size": "run",
    "lr": "run",
    "seed": "run",
}
# Algorithm parameters that stay in the Algorithm column (the rest of them: Advanced).
MAIN_ALGORITHM_PARAMS = ("mu", "variant", "reg_alpha", "preset", "gen_batch_size", "proxy")
# Entered in their own widgets (lists / free text), not generated from the schema.
SEPARATE = ("tags", "note")
LABELS = {
    "data.name": "Dataset",
    "partition.alpha": "Dirichlet α",
    "partition.num_users": "Users",
    "algorithm.name": "Algorithm",
    "algorithm.gen_batch_size": "Generator batch B_G",
    "algorithm.mu": "FedProx μ",
    "fidelity.profile": "Fidelity profile",
    "local_steps": "Local steps T",
    "batch_size": "Batch size B",
    "lr": "Learning rate",
}


@dataclass(frozen=True)
class FormField:
    """One input: dotted spec path, label, kind (`int|float|str|bool|choice`), default, limits.

    `nullable`: None is allowed (a knob left to the fidelity profile, an optional size);
    `only`: the algorithms this parameter belongs to; `section`: data, algorithm, run or
    advanced. Bounds are the schema's (`exclusive_minimum` for `gt`).
    """

    path: str
    label: str
    kind: str
    default: Any
    choices: tuple[Any, ...] = ()
    help: str = ""
    only: tuple[str, ...] = ()
    section: str = "advanced"
    nullable: bool = False
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None


def _resolve(schema: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return dict(schema["$defs"][ref.split("/")[-1]])
    return node


def _leaf(path: str, prop: Mapping[str, Any], default: Any, only: tuple[str, ...], section: str) -> FormField | None:  # fmt: skip
    """A FormField from one schema property (None for what a form cannot edit, e.g. a const)."""
    nullable = False
    body: Mapping[str, Any] = prop
    if "anyOf" in prop:
        options = [o for o in prop["anyOf"] if o.get("type") != "null"]
        nullable = len(options) < len(prop["anyOf"])
        if len(options) > 1 and all("enum" in o or "const" in o for o in options):
            # Literal["heldout"] | DatasetName: one choice list
            values = [v for o in options for v in (o["enum"] if "enum" in o else [o["const"]])]
            body = {"type": "string", "enum": values}
        elif len(options) != 1:
            return None
        else:
            body = options[0]
    if "const" in body:
        return None
    kind = {"integer": "int", "number": "float", "boolean": "bool", "string": "str"}.get(
        str(body.get("type"))
    )
    choices: tuple[Any, ...] = ()
    if "enum" in body:
        kind, choices = "choice", tuple(body["enum"])
    if kind is None:
        return None
    name = path.split(".")[-1]
    # "users_per_round" -> "Users per round" (the schema's titles are Title Case)
    label = LABELS.get(path, name.replace("_", " ").capitalize())
    return FormField(
        path=path,
        label=label,
        kind=kind,
        default=default,
        choices=choices,
        help=str(prop.get("description") or body.get("description") or ""),
        only=only,
        section=section,
        nullable=nullable,
        minimum=body.get("minimum"),
        maximum=body.get("maximum"),
        exclusive_minimum=body.get("exclusiveMinimum"),
    )


def fields_from_schema(schema: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[FormField]:
    """Every editable spec field, from GET /spec/schema, with defaults from GET /spec/defaults.

    Nested sections are walked; each algorithm's parameters come from its own schema
    (default: that algorithm's default, not the default algorithm's); `algorithm.name`
    lists every algorithm the schema's discriminator knows.
    """
    out: list[FormField] = []

    def walk(node: Mapping[str, Any], prefix: str) -> None:
        for key, prop in node.get("properties", {}).items():
            path = f"{prefix}{key}"
            if path in SEPARATE:
                continue
            if path == "algorithm":
                algorithms(prop)
                continue
            target = _resolve(schema, prop)
            if target.get("type") == "object" and "properties" in target:
                walk(target, f"{path}.")
                continue
            found = _leaf(path, prop, get_dotted(defaults, path), (), MAIN.get(path, "advanced"))
            if found is not None:
                out.append(found)

    def algorithms(prop: Mapping[str, Any]) -> None:
        mapping: dict[str, str] = prop["discriminator"]["mapping"]
        names = tuple(mapping)
        out.append(
            FormField(
                "algorithm.name",
                LABELS["algorithm.name"],
                "choice",
                get_dotted(defaults, "algorithm.name"),
                names,
                section="algorithm",
            )
        )
        params: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
        for name in names:
            sub = _resolve(schema, {"$ref": mapping[name]})
            for key, p in sub.get("properties", {}).items():
                if key != "name":
                    params.setdefault(key, []).append((name, p))
        for key, owners in params.items():
            # One field per (parameter, default): algorithms that share a parameter with the
            # same schema share the field (feddistill and feddistill-plus: reg_alpha).
            groups: dict[str, list[str]] = {}
            for name, p in owners:
                groups.setdefault(repr(sorted(p.items())), []).append(name)
            for names_ in groups.values():
                p = dict(owners[[n for n, _ in owners].index(names_[0])][1])
                section = "algorithm" if key in MAIN_ALGORITHM_PARAMS else "advanced"
                found = _leaf(f"algorithm.{key}", p, p.get("default"), tuple(names_), section)
                if found is not None:
                    out.append(found)

    walk(schema, "")
    return out


def applies(f: FormField, algorithms: Iterable[str]) -> bool:
    """Whether the field is shown for the chosen algorithm(s)."""
    return not f.only or bool(set(f.only) & set(algorithms))


def parse_list(text: str, kind: str) -> list[Any]:
    """'0.1, 1' -> [0.1, 1.0]; raises ValueError naming the bad item."""
    items = [t.strip() for t in str(text).replace(";", ",").split(",") if t.strip()]
    if not items:
        raise ValueError("needs at least one value")
    return [coerce(t, kind) for t in items]


def coerce(value: Any, kind: str) -> Any:
    """Convert one form value to the field's type (ValueError with a readable message)."""
    try:
        if kind == "int":
            f = float(value)
            if not f.is_integer():
                raise ValueError
            return int(f)
        if kind == "float":
            return float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"{value!r} is not a valid {'integer' if kind == 'int' else 'number'}"
        ) from None
    return str(value)


def algorithm_block(
    name: str, values: Mapping[str, Any], fields: list[FormField]
) -> dict[str, Any]:
    """The `algorithm` mapping for `name` with only the parameters that algorithm accepts."""
    block: dict[str, Any] = {"name": name}
    for f in fields:
        if f.only and name in f.only and f.path in values:
            block[f.path.split(".", 1)[1]] = values[f.path]
    return block


def build_spec(
    values: Mapping[str, Any], fields: list[FormField], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """Single-run values (one per dotted field) over the defaults -> the nested spec to send.

    Fields not in `values` keep their default; the algorithm block holds only the chosen
    algorithm's parameters. An untouched form gives back `defaults` exactly.
    """
    spec: dict[str, Any] = copy.deepcopy(dict(defaults))
    name = values.get("algorithm.name", get_dotted(defaults, "algorithm.name"))
    for path, value in values.items():
        if not path.startswith("algorithm."):
            set_dotted(spec, path, value)
    spec["algorithm"] = algorithm_block(name, values, fields)
    return spec


def build_sweep(
    lists: Mapping[str, list[Any]], fields: list[FormField], defaults: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Sweep values (a list per field) -> (base spec, grid of dotted field -> values).

    Fields with one value go to the base. Algorithm names and their parameters become
    a list of whole `algorithm` mappings (each algorithm with its own parameter grid),
    so e.g. fedavg x fedgen(B_G in 16, 32) is three algorithm entries.
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
        params = [f.path for f in fields if f.only and name in f.only and f.path in lists]
        for combo in itertools.product(*(lists[p] for p in params)):
            entries.append(algorithm_block(name, dict(zip(params, combo, strict=True)), fields))
    if len(entries) > 1:
        grid["algorithm"] = entries
    else:
        base["algorithm"] = entries[0]
    return base, grid


def sweep_size(grid: Mapping[str, list[Any]]) -> int:
    """How many runs a grid expands to."""
    n = 1
    for vals in grid.values():
        n *= len(vals)
    return n


def split_errors(
    errors: Mapping[str, str], fields: Iterable[FormField]
) -> tuple[dict[str, str], dict[str, str]]:
    """Errors for fields on the form vs the rest (shown at the top)."""
    paths = {f.path for f in fields}
    on_form = {k: v for k, v in errors.items() if k in paths}
    return on_form, {k: v for k, v in errors.items() if k not in paths}
