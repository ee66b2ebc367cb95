"""Submit: a form built from the spec's schema, starting from the server's defaults; a run or a sweep.

The form starts from GET /spec/defaults (what an empty submission gets, equal to `fedgen
validate` of an empty file) and is generated from GET /spec/schema, so an untouched form
submits exactly the defaults. Only the chosen algorithm's parameters are shown, and the
folder's fields (data.folder: path, classes as a count or names, channels, image size) only
for the `folder` dataset, the synthetic samples and classes only for `synthetic`
(FormField.only, dashboard.spec_form_folder); every other spec field is under "Advanced".
The spec that will be sent is shown as YAML, without the fields left at a null default
(dashboard.spec_build: the API gives a missing field the same null).

What is shown is what is sent: inputs take any value and a value outside the schema's limits
is named under its field ("rounds: must be at least 1"); Validate and Submit refuse while any
field is refused, and validate or send exactly the YAML shown. Datasets no live worker can
load (GET /workers) are marked in the picker and refused, unless the spec names its own
data.root or data.download.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
import yaml
from pydantic import ValidationError

from dashboard import loaders, ui
from dashboard.client import ApiError
from dashboard.form_checks import check, read_list, read_tags, refusals
from dashboard.spec_build import applies, build_spec, build_sweep, sweep_size
from dashboard.spec_form import (
    FormField,
    fields_from_schema,
    split_errors,
    text_field,
    text_fields,
)
from dashboard.spec_form_folder import (
    ALGORITHM,
    beside_their_field,
    names_text,
    parse_names,
    sweeps_whole,
)
from dashboard.worker_offer import Offer, offer
from fedgen.spec import SpecError, format_validation_error
from fedgen.specdict import get_dotted
from fedgen.sweep import SweepSpec, expand

ERR_KEY = "submit_errors"  # {"body": the JSON the API judged, "errors": field -> message}
UNSET = "— profile's choice —"


st.title("Submit")
url, token = ui.connection()
# (defaults, schema) from the server: the one source of the form's fields and values.
defaults, schema = ui.call(loaders.spec_source, url, token)
FIELDS: list[FormField] = fields_from_schema(schema, defaults)
# The server's datasets (its registry, plugins included), as its schema lists them.
DATASET_NAMES: tuple[Any, ...] = next((f.choices for f in FIELDS if f.path == "data.name"), ())
TEXT = text_fields(schema)
SWEEP_NAME = text_field("name", SweepSpec.model_json_schema()["properties"]["name"])


def _forget() -> None:
    """A widget changed: the API's errors were about another body."""
    st.session_state.pop(ERR_KEY, None)


def _now(path: str) -> Any:
    """A single-value field's current value, before its widget is drawn (read from its state)."""
    return st.session_state.get(f"submit_one_{path}", get_dotted(defaults, path))


def _offer() -> tuple[Offer | None, str]:
    """What the live workers can load for this spec's queue; (None, why) when unknown."""
    try:
        workers = loaders.workers(url, token)
    except ApiError as exc:
        return (
            None,
            f"The live workers could not be read ({exc.message}): datasets are not checked.",
        )
    own_data = bool(_now("data.root")) or bool(_now("data.download"))
    return offer(workers, str(_now("device") or "cpu"), any_worker=own_data), ""


OFFER, offer_unknown = _offer()


def dataset_label(value: Any) -> str:
    """A dataset option's label: 'mnist — no live worker has it' when none can load it."""
    if OFFER is None or value not in DATASET_NAMES:
        return UNSET if value is None else str(value)
    return OFFER.label(value)


def dataset_problem(values: list[Any]) -> str | None:
    """The first chosen dataset no live worker can load, as the picker says it."""
    if OFFER is None:
        return None
    return next((r for v in values if v in DATASET_NAMES and (r := OFFER.reason(v))), None)


mode = st.radio(
    "What to submit",
    ["Single run", "Sweep"],
    horizontal=True,
    key="submit_mode",
    on_change=_forget,
    help="In a sweep, give comma-separated values for any field in the three columns: "
    "every combination becomes a run.",
)
sweep = mode == "Sweep"
local_errors: dict[str, str] = {}  # field -> why the form refuses its value (nothing is sent)
# The API's answer about the body last validated; any change to the form forgets it (`_forget`).
judged: dict[str, Any] = st.session_state.get(ERR_KEY) or {}
server_errors: dict[str, str] = dict(judged.get("errors") or {})


def single(f: FormField, key: str) -> Any:
    """One value for `f` (None allowed where the schema allows it), exactly as entered.

    Number inputs get no min/max: Streamlit would keep the last in-range value while showing
    the typed one in red, so the form would send a value it does not show; `check` refuses
    an out-of-range value instead, naming the limit.
    """
    if f.kind == "choice" or (f.kind == "bool" and f.nullable):
        options = list(f.choices) if f.kind == "choice" else [True, False]
        if f.nullable:
            options = [None, *options]
        return st.selectbox(
            f.label, options, index=options.index(f.default), key=key, help=f.help,
            format_func=dataset_label, on_change=_forget,
        )  # fmt: skip
    if f.kind == "names":  # a count ('3') or comma-separated names ('cat, dog, bird')
        text = st.text_input(
            f.label, names_text(f.default), key=key, help=f.help, on_change=_forget,
            placeholder="3, or cat, dog, bird",
        )  # fmt: skip
        return parse_names(text)
    if f.kind == "bool":
        return st.checkbox(f.label, value=bool(f.default), key=key, help=f.help, on_change=_forget)
    if f.kind == "int":
        return st.number_input(
            f.label, value=f.default, step=1, key=key, help=f.help,
            placeholder=UNSET if f.nullable else None, on_change=_forget,
        )  # fmt: skip
    if f.kind == "float":
        # %.10g: a typed 0.1234567 is shown as typed (%g would show 0.123457 and send more)
        got = st.number_input(
            f.label, value=None if f.default is None else float(f.default), format="%.10g",
            key=key, help=f.help, placeholder=UNSET if f.nullable else None, on_change=_forget,
        )  # fmt: skip
        return None if got is None else float(got)
    text = st.text_input(
        f.label, "" if f.default is None else str(f.default), key=key, help=f.help,
        on_change=_forget,
    )  # fmt: skip
    return None if f.nullable and not text else text


def listed(f: FormField, key: str) -> list[Any]:
    """Sweep mode: a list of values for `f`, as typed (a value that does not parse stays text)."""
    if f.kind in ("choice", "bool"):
        options = list(f.choices) if f.kind == "choice" else [True, False]
        value: list[Any] = st.multiselect(
            f.label, options, default=[f.default], key=key, help=f.help,
            format_func=dataset_label, on_change=_forget,
        )  # fmt: skip
        if not value:
            local_errors[f.path] = "pick at least one value"
        return value
    default = "0, 1, 2" if f.path == "seed" else str(f.default)
    help_ = f"Comma-separated values. {f.help}"
    text = st.text_input(f.label, default, key=key, help=help_, on_change=_forget)
    values, problem = read_list(text, f)
    if problem:
        local_errors[f.path] = problem
    return values


def in_list(f: FormField) -> bool:
    """Whether `f` takes a list: in sweep mode's columns, but a conditional section's fields
    (data.folder: one object, zipped with data.name) and nullable ones take one value."""
    return sweep and f.section != "advanced" and not f.nullable and not sweeps_whole(f)


def widget(f: FormField) -> Any:
    """One input with the reason it is refused right below it (a list in sweep mode's columns)."""
    as_list = in_list(f)
    key = f"submit_{'sw' if as_list else 'one'}_{f.path}"
    value = listed(f, key) if as_list else single(f, key)
    chosen = value if as_list else [value]
    if f.path not in local_errors and not as_list and (why := check(f, value)):
        local_errors[f.path] = why
    if f.path not in local_errors and (why := dataset_problem(chosen)):
        local_errors[f.path] = why
    msg = local_errors.get(f.path) or server_errors.get(f.path)
    if msg:
        st.markdown(f":red[{f.path}: {msg}]")
    if f.path == "data.name":
        dataset_caption()
    return value


def dataset_caption() -> None:
    """Under the dataset picker: which datasets the live workers can load, or why unknown."""
    if OFFER is None:
        st.caption(offer_unknown)
    elif OFFER.any_worker:
        st.caption(
            f"data.root or data.download is set: any worker of the {OFFER.queue} queue may take it."
        )
    elif OFFER.notice() is None and OFFER.datasets is not None:
        have = ", ".join(d for d in DATASET_NAMES if d in OFFER.datasets) or "none"
        st.caption(f"Live workers ({OFFER.queue} queue) can load: {have}.")


def combination_errors(sweep_body: dict[str, Any]) -> dict[str, str]:
    """Where a sweep's combinations break a rule ('grid.seed[2]: ...'); {} when all are valid."""
    try:
        expand(SweepSpec.model_validate(sweep_body), strict=True)
    except SpecError as exc:
        return dict(exc.errors)
    except ValidationError as exc:  # the grid's own limits (runs, values per field)
        return {f"sweep.{loc}": msg for loc, msg in format_validation_error(exc)}
    return {}


values: dict[str, Any] = {}
# Each drawn field's picked values: a field with `only` is drawn when the field it belongs to
# (algorithm.name, drawn first; data.name, drawn before data.folder.*) has one of them.
picked: dict[str, list[Any]] = {}


def draw(f: FormField) -> None:
    """`f`'s widget when it applies to what is picked so far; its value in `values`."""
    if applies(f, picked):
        values[f.path] = widget(f)
        picked[f.path] = values[f.path] if in_list(f) else [values[f.path]]


algo_field = next(f for f in FIELDS if f.path == ALGORITHM)
sections = {"data": "Data and partition", "algorithm": "Algorithm", "run": "Training"}
cols = st.columns(3)
with cols[1]:
    st.subheader(sections["algorithm"])
    draw(algo_field)
for col, (section, title) in zip(cols, sections.items(), strict=True):
    with col:
        if section != "algorithm":
            st.subheader(title)
        for f in beside_their_field(FIELDS):  # the folder's fields right under the dataset
            if f.section == section and f is not algo_field:
                draw(f)

with st.expander("Advanced: every other spec field"):
    st.caption(
        "Left at the server's defaults unless changed. Knobs set to "
        f"“{UNSET}” take the fidelity profile's value (docs/fidelity.md)."
    )
    advanced = [f for f in FIELDS if f.section == "advanced" and applies(f, picked)]
    groups: dict[str, list[FormField]] = {}
    for f in advanced:
        groups.setdefault(f.path.split(".")[0] if "." in f.path else "training", []).append(f)
    for name, members in groups.items():
        st.markdown(f"**{name}**")
        acols = st.columns(3)
        for i, f in enumerate(members):
            with acols[i % 3]:
                draw(f)

with st.expander("Tags and note"):
    tag = TEXT["tags"]
    tags_text = st.text_input(
        "Tags (comma-separated)", key="submit_tags", help=f"Each tag: {tag.help}",
        on_change=_forget,
    )  # fmt: skip
    tags, tags_problem = read_tags(tags_text, tag, schema)
    note = st.text_area("Note", key="submit_note", help=TEXT["note"].help, on_change=_forget)
    sweep_name = st.text_input(
        "Sweep name", "sweep", key="submit_sweep_name", disabled=not sweep,
        help=SWEEP_NAME.help, on_change=_forget,
    )  # fmt: skip
    for path, problem in (
        ("tags", tags_problem),
        ("note", check(TEXT["note"], note)),
        ("name", check(SWEEP_NAME, sweep_name) if sweep else None),
    ):
        if problem:
            local_errors[path] = problem
            st.markdown(f":red[{path}: {problem}]")

extra: dict[str, Any] = {"tags": tags, "note": note}

if sweep:
    # A list-valued single field (class names) stays one value: only listed fields are lists.
    lists = {
        f.path: values[f.path] if in_list(f) else [values[f.path]]
        for f in FIELDS
        if f.path in values
    }
    base, grid = build_sweep(lists, FIELDS, defaults)
    base.update(extra)
    body: dict[str, Any] = {"name": sweep_name, "base": base, "grid": grid}
    spec = base
    st.caption(f"This sweep expands to **{sweep_size(grid)}** runs.")
else:
    spec = {**build_spec(values, FIELDS, defaults), **extra}
    body = spec

st.subheader("What will be sent")
if local_errors:
    st.caption(
        f":red[Nothing is validated or sent while {', '.join(local_errors)} "
        f"{'is' if len(local_errors) == 1 else 'are'} refused (below).]"
    )
st.caption("Save as `spec.yaml` and run it locally with `fedgen run spec.yaml` (sweeps too).")
st.code(yaml.safe_dump(body, sort_keys=False), language="yaml")

top_errors = split_errors(server_errors, FIELDS)[1]
for field, msg in top_errors.items():
    st.error(f"{field}: {msg}")
if OFFER is not None and OFFER.notice():
    st.warning(OFFER.notice(), icon=":material/hourglass_empty:")

b1, b2, _ = st.columns([1, 1, 4])
validate = b1.button("Validate", key="submit_validate")
submit = b2.button("Submit sweep" if sweep else "Submit run", type="primary", key="submit_go")

if local_errors:
    # Nothing is validated or sent while a field is refused: the YAML above is not sendable.
    what = "Not validated" if validate else "Not submitted" if submit else "Refused until fixed"
    st.error(f"**{what}**: fix these fields first.\n\n{refusals(local_errors)}")
elif validate or submit:
    # Exactly the body shown: the API validates the (base) spec; a sweep's every combination
    # is expanded by the same code the API runs on POST /sweeps (fedgen.sweep.expand).
    result = ui.call(ui.client().validate_spec, spec)
    problems = result.errors if not result.ok else (combination_errors(body) if sweep else {})
    if problems:
        st.session_state[ERR_KEY] = {"body": body, "errors": problems}
        st.rerun()
    st.session_state[ERR_KEY] = {}
    if validate:
        st.success(
            f"The sweep is valid: all {sweep_size(grid)} runs, as shown above."
            if sweep
            else "The spec is valid, exactly as shown above."
        )
    elif sweep:
        created = ui.try_call(ui.client().create_sweep, sweep_name, base, grid)
        if created:
            loaders.runs.clear()
            loaders.sweeps.clear()
            st.success(f"Queued sweep {created.get('id')} with {created.get('count')} runs.")
            st.page_link(
                "app_pages/compare.py",
                label="Compare its runs as they land",
                icon=":material/compare_arrows:",
                query_params={"sweep": str(created.get("id"))},
            )
    else:
        run = ui.try_call(ui.client().submit_run, spec)
        if run:
            loaders.runs.clear()
            st.session_state["live_run_id"] = run["id"]
            st.success(f"Queued run {run['id']}.")
            st.page_link(
                "app_pages/live.py", label="Watch it on the Live page", icon=":material/monitoring:"
            )
    # A valid spec the server still has doubts about (a folder its host cannot see): said, not
    # refused, since the worker that runs it may be on another host.
    for name, msg in result.warnings.items():
        st.warning(f"{name}: {msg}", icon=":material/warning:")
