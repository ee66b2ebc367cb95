"""The Submit form's fields, built from the spec's own JSON schema and defaults (what the
form's values become, a spec or a sweep: dashboard.submit_page.spec_build).

One set of defaults: the form starts from `GET /spec/defaults` (equal to `fedgen validate`
of an empty file) with the lab's defaults for new runs laid over it (`form_start`:
`execution: auto`, as POST /runs gives a spec that names none) and takes its fields from
`GET /spec/schema`: choices from the schema's enums (the spec's Literals), bounds from its
Fields, help from their descriptions. An untouched form therefore submits exactly what an
empty submission gets. Values are keyed by dotted spec paths (`partition.alpha`); algorithm parameters
are `algorithm.<param>` and belong to the algorithms listed in `FormField.only`; the
`data.folder` section's fields belong to `data.name` 'folder' the same way (`only_of`, from
the schema's if/then rule: dashboard.conditional_fields), and data.synthetic_* to 'synthetic'
(the schema's `x-only-when`).

What is shown is what is sent: the widgets take any number (a bounded Streamlit input keeps
its last in-range value while showing the typed one in red), and `check` / `check_list`
(dashboard.submit_page.form_checks) refuse a value outside the schema's limits with the
field's limit ("must be at least 1"). `Offer` (dashboard.worker_offer) says which datasets the live
workers (GET /workers) can load, as the dispatcher (lab/dispatch.py) decides it.
`help_text` gives each field its help: the schema's description, the fidelity knob's paper
and official values (fedgen.knobs), the generator presets (fedgen.generator_presets), and
`HELP` only where the spec has no description.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from dashboard.conditional_fields import (
    ALGORITHM,
    count_or_names,
    field_rule,
    names_allowed,
    section_rules,
    single_option,
)
from dashboard.spec_schema import SchemaNode
from fedgen import paper
from fedgen.execution_spec import with_new_run_defaults
from fedgen.generator_presets import PRESETS
from fedgen.knobs import KNOBS, Knob
from fedgen.specdict import get_dotted
from vocab.run_names import paper_column

# Fields shown in the form's columns; every other spec field is under "Advanced".
MAIN: dict[str, str] = {
    "data.name": "data",
    "data.synthetic_samples": "data",
    "data.folder.path": "data",
    "data.folder.classes": "data",
    "data.folder.channels": "data",
    "data.folder.image_size": "data",
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
    "data.folder.path": "Folder path",
    "data.folder.classes": "Classes (count or names)",
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
    """One input: dotted spec path, label, kind (`int|float|str|bool|choice|names`), default,
    limits.

    `nullable`: None is allowed (a knob left to the fidelity profile, an optional size);
    `only`: the values of the field `only_of` this one belongs to (an algorithm parameter's
    algorithms; `folder` for data.folder.*, of data.name); `section`: data, algorithm, run or
    advanced. Bounds are the schema's (`exclusive_minimum` for `gt`); kind `names` (a count
    or class names) has the count's bounds, `min_items`/`max_items` and each name's lengths.
    `key`: set where algorithms name a parameter alike with different schemas (FedProx's and
    MOON's mu): each gets its own widget and value (`form_key`), the spec path stays `path`.
    """

    path: str
    label: str
    kind: str
    default: Any
    choices: tuple[Any, ...] = ()
    help: str = ""
    only: tuple[str, ...] = ()
    section: str = "advanced"
    only_of: str = ALGORITHM
    nullable: bool = False
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    exclusive_maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    key: str = ""

    @property
    def form_key(self) -> str:
        """The field's own name in the form (widget key, values): `key`, else `path`."""
        return self.key or self.path


# -- help --------------------------------------------------------------------------------
def _named(intro: str, names: Mapping[str, str], order: Iterable[str]) -> str:
    """'intro fedavg = FedAvg, ...' for the names the paper writes differently."""
    return intro + " " + ", ".join(f"`{n}` = {names[n]}" for n in order if n in names) + "."


def _presets_help() -> str:
    rows = "; ".join(
        f"{family}: " + ", ".join(f"`{name}` {h}/{z}" for name, (h, z) in presets.items())
        for family, presets in PRESETS.items()
    )
    return (
        "Generator dimensions d_h/d_ε (hidden layer / noise), the official GENERATORCONFIGS; "
        f"the paper's Table 2 compares them on EMNIST. {rows}. `noise_dim` and `hidden_dim` "
        "(Advanced), when set, override the preset."
    )


# The spec's dataset names of the paper's Table 1 rows, in the paper's order.
_TABLE1_DATASETS = [
    n
    for label in dict.fromkeys(s.dataset for s in paper.TABLE1)
    for n, named in paper.DATASETS.items()
    if named == label
]

# Help for fields that have a paper meaning but no description in fedgen/spec.py. One source:
# a field whose schema has a description uses it, and tests/dashboard/test_spec_form.py fails
# when an entry here duplicates one (move the text into the spec's Field instead).
HELP: dict[str, str] = {
    "data.name": "The dataset. In the paper's Table 1: "
    + ", ".join(f"`{n}` ({paper.DATASETS[n]})" for n in _TABLE1_DATASETS)
    + ". Only datasets a live worker can load are offered (unless data.root or data.download "
    "is set, under Advanced).",
    "rounds": "Global communication rounds (the paper: 200).",
    "batch_size": "B: the minibatch of each local step (the paper: B = 32).",
    "lr": "Learning rate of the users' SGD (the official code: 0.01).",
    "fidelity.profile": "Which behaviour every fidelity knob left at the profile's choice takes: "
    "`paper` as the FedGen paper (Zhu et al., ICML 2021) describes it, `official` as the "
    "authors' code, which produced the paper's numbers, does it"
    + f" ({len(KNOBS)} knobs: docs/fidelity.md, and each knob's own help under Advanced).",
    "algorithm.preset": _presets_help(),
    "algorithm.noise_dim": "d_ε: the generator's noise size; empty = the preset's.",
    "algorithm.hidden_dim": "d_h: the generator's hidden layer; empty = the preset's.",
    "algorithm.variant": "`paper`: the proximal term μ/2·‖w − w_t‖² (Li et al. 2020); "
    "`official`: the official code's λ·(w − w_t) + l2·w (lamda, l2 under Advanced).",
    "eval_batch_size": "Batch size of evaluation only (does not change results).",
    "device": "`cpu`, `cuda` or `cuda:N`; cuda runs go to the gpu queue.",
    "algorithm.proxy_size": "Unlabelled proxy samples FedDF distils on.",
    "algorithm.distill_steps": "Server distillation steps per round (FedDF).",
    "algorithm.distill_batch_size": "Proxy batch of each distillation step.",
    "algorithm.distill_lr": "Learning rate of the server's distillation.",
    "algorithm.temperature": "Softmax temperature of the distillation KL.",
}


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"`{value}`" if isinstance(value, str) else f"{value:g}"


def _knob_help(k: Knob, described: str) -> str:
    official = _shown(k.official) + "".join(
        f" ({_shown(v)} on {d})" for d, v in k.official_by_dataset.items()
    )
    unset = "" if "profile's choice" in described else "Empty = the fidelity profile's choice. "
    return (
        f"Fidelity knob. Paper: {k.paper_text} → {_shown(k.paper)}. Official code: "
        f"{k.official_text} → {official}. {unset}(docs/fidelity.md, {k.why})"
    )


def number_text(x: float) -> str:
    """A limit as written in a message: 1, not 1.0; 0.5."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def limits(f: FormField) -> str:
    """The field's limits in words ('at least 1, at most 10000'); '' when it has none."""
    if f.kind == "names":
        return names_allowed(f)
    parts = []
    if f.minimum is not None:
        parts.append(f"at least {number_text(f.minimum)}")
    if f.exclusive_minimum is not None:
        parts.append(f"more than {number_text(f.exclusive_minimum)}")
    if f.maximum is not None:
        parts.append(f"at most {number_text(f.maximum)}")
    if f.exclusive_maximum is not None:
        parts.append(f"less than {number_text(f.exclusive_maximum)}")
    if f.max_length is not None:
        parts.append(f"at most {f.max_length} characters")
    return ", ".join(parts)


def help_text(f: FormField, described: str) -> str:
    """The help of `f`: the spec's description (else `HELP`), the knob's paper and official
    values when it is a fidelity knob, and its limits."""
    knob = next((k for k in KNOBS if k.path == f.path), None)
    parts = [described or HELP.get(f.path, "")]
    if knob is not None:
        parts.append(_knob_help(knob, described))
    if limits(f):
        parts.append(f"Allowed: {limits(f)}.")
    return " ".join(p for p in parts if p)


def text_field(path: str, prop: SchemaNode | Mapping[str, Any]) -> FormField:
    """A free-text field's limits from its schema property (a string without them if none)."""
    found = _leaf(path, SchemaNode.of(prop), "", (), "advanced")
    return found or FormField(path, path, "str", "")


def text_fields(schema: SchemaNode | Mapping[str, Any]) -> dict[str, FormField]:
    """`tags` (one tag's limits) and `note`, from the spec's schema, for their own widgets."""
    props = SchemaNode.of(schema).properties
    tags = props["tags"] if "tags" in props else SchemaNode()
    return {
        "tags": text_field("tags", tags.items or SchemaNode()),
        "note": text_field("note", props["note"] if "note" in props else SchemaNode()),
    }


def _leaf(
    path: str, prop: SchemaNode, default: Any, only: tuple[str, ...], section: str
) -> FormField | None:
    """A FormField from one schema property (None for what a form cannot edit, e.g. a const)."""
    nullable = False
    body = prop
    if prop.any_of is not None:
        options = prop.non_null()
        nullable = len(options) < len(prop.any_of)
        if len(options) > 1 and all(o.has_enum or o.has_const for o in options):
            # Literal["heldout"] | DatasetName: one choice list
            values = [v for o in options for v in (o.enum if o.enum is not None else [o.const])]
            body = SchemaNode(type="string", enum=values)
        elif (names := count_or_names(options)) is not None:
            body = names  # int | list[str]: a count or class names
        elif len(options) != 1:
            return None
        else:
            body = options[0]
    if body.has_const:
        return None
    kind = {
        "integer": "int",
        "number": "float",
        "boolean": "bool",
        "string": "str",
        "names": "names",
    }.get(str(body.type))
    choices: tuple[Any, ...] = ()
    if body.enum is not None:
        kind, choices = "choice", tuple(body.enum)
    if kind is None:
        return None
    name = path.split(".")[-1]
    # "users_per_round" -> "Users per round" (the schema's titles are Title Case)
    label = LABELS.get(path, name.replace("_", " ").capitalize())
    field = FormField(
        path=path,
        label=label,
        kind=kind,
        default=default,
        choices=choices,
        only=only,
        section=section,
        nullable=nullable,
        minimum=body.minimum,
        maximum=body.maximum,
        exclusive_minimum=body.exclusive_minimum,
        exclusive_maximum=body.exclusive_maximum,
        min_length=body.min_length,
        max_length=body.max_length,
        pattern=body.pattern,
        min_items=body.min_items,
        max_items=body.max_items,
    )
    described = str(prop.description or body.description or "")
    return replace(field, help=help_text(field, described))


def form_start(defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The spec the form starts from: GET /spec/defaults (the schema's defaults, what
    `fedgen validate` of an empty file gives) with the lab's defaults for new runs, which
    POST /runs writes into a spec that does not name them (`execution: auto`:
    fedgen.execution_spec). An untouched form therefore stores what an empty POST /runs
    stores, and shows the execution a new run gets."""
    return dict(with_new_run_defaults(dict(defaults)))


def fields_from_schema(
    schema: SchemaNode | Mapping[str, Any], defaults: Mapping[str, Any]
) -> list[FormField]:
    """Every editable spec field, from GET /spec/schema, with defaults from GET /spec/defaults.

    Nested sections are walked (an optional one, `data.folder`, too: its fields belong to the
    values of `data.name` the schema's if/then names); each algorithm's parameters come from
    its own schema (default: that algorithm's default, not the default algorithm's);
    `algorithm.name` lists every algorithm the schema's discriminator knows.
    """
    root = SchemaNode.of(schema)
    return _walk(root, root, defaults, "", None)


def _walk(
    schema: SchemaNode,
    node: SchemaNode,
    defaults: Mapping[str, Any],
    prefix: str,
    when: tuple[str, tuple[Any, ...]] | None,
) -> list[FormField]:
    """The fields of one object schema at `prefix`; `when`: (only_of, only) of its section."""
    out: list[FormField] = []
    rules = section_rules(node)
    for key, prop in node.properties.items():
        path = f"{prefix}{key}"
        if path in SEPARATE:
            continue
        if path == "algorithm":
            out += _algorithm_fields(schema, prop, defaults)
            continue
        inner = (f"{prefix}{rules[key][0]}", rules[key][1]) if key in rules else when
        if (rule := field_rule(prop)) is not None:  # data.synthetic_*: for 'synthetic' alone
            inner = (f"{prefix}{rule[0]}", rule[1])
        target = single_option(prop).resolve(schema)
        if target.type == "object" and "properties" in target.model_fields_set:
            out += _walk(schema, target, defaults, f"{path}.", inner)
            continue
        default = get_dotted(defaults, path, prop.default)
        found = _leaf(path, prop, default, (), MAIN.get(path, "advanced"))
        if found is not None:
            out.append(replace(found, only_of=inner[0], only=inner[1]) if inner else found)
    return out


def _algorithm_fields(
    schema: SchemaNode, prop: SchemaNode, defaults: Mapping[str, Any]
) -> list[FormField]:
    """`algorithm.name` and every algorithm's parameters (`only`: the algorithms they belong to)."""
    if prop.discriminator is None:
        raise KeyError("discriminator")  # as the dict read did: the spec's algorithm is tagged
    mapping = prop.discriminator.mapping
    names = tuple(mapping)
    out = [
        FormField(
            "algorithm.name",
            LABELS["algorithm.name"],
            "choice",
            get_dotted(defaults, "algorithm.name"),
            names,
            help=_named("The method:", {n: paper_column(n) for n in names}, names),
            section="algorithm",
        )
    ]
    params: dict[str, list[tuple[str, SchemaNode]]] = {}
    for name in names:
        sub = SchemaNode(ref=mapping[name]).resolve(schema)
        for key, p in sub.properties.items():
            if key != "name":
                params.setdefault(key, []).append((name, p))
    for key, owners in params.items():
        # One field per (parameter, default): algorithms that share a parameter with the
        # same schema share the field (feddistill and feddistill-plus: reg_alpha).
        groups: dict[str, list[str]] = {}
        for name, p in owners:
            groups.setdefault(repr(sorted(p.as_json().items())), []).append(name)
        for names_ in groups.values():
            p = owners[[n for n, _ in owners].index(names_[0])][1]
            section = "algorithm" if key in MAIN_ALGORITHM_PARAMS else "advanced"
            found = _leaf(f"algorithm.{key}", p, p.default, tuple(names_), section)
            if found is not None and len(groups) > 1:  # one path, several schemas
                found = replace(found, key=f"algorithm.{key}@{'+'.join(names_)}")
            if found is not None:
                out.append(found)
    return out


def choices_of(
    schema: SchemaNode | Mapping[str, Any], defaults: Mapping[str, Any], paths: Iterable[str]
) -> dict[str, list[Any]]:
    """The choices the form offers for each of `paths` ({"algorithm.name": ["fedavg", ...]}):
    what the server's schema lists, its plugins included (the Runs page's filters)."""
    by_path = {f.path: f for f in fields_from_schema(schema, defaults)}
    return {p: list(by_path[p].choices) if p in by_path else [] for p in paths}


@dataclass(frozen=True)
class SpecChoices:
    """The server's algorithms and datasets (plugins included), as the Submit form offers
    them (the Runs page's filters); none where the API could not be read."""

    algorithms: tuple[Any, ...] = ()
    datasets: tuple[Any, ...] = ()

    @classmethod
    def of(cls, schema: SchemaNode | Mapping[str, Any], defaults: Mapping[str, Any]) -> SpecChoices:
        """The choices of `algorithm.name` and `data.name` in the server's schema."""
        found = choices_of(schema, defaults, (ALGORITHM, "data.name"))
        return cls(tuple(found[ALGORITHM]), tuple(found["data.name"]))


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


def split_errors(
    errors: Mapping[str, str], fields: Iterable[FormField]
) -> tuple[dict[str, str], dict[str, str]]:
    """Errors for fields on the form vs the rest (shown at the top)."""
    paths = {f.path for f in fields}
    on_form = {k: v for k, v in errors.items() if k in paths}
    return on_form, {k: v for k, v in errors.items() if k not in paths}
