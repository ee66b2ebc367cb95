"""Submit: a form built from the spec's schema, starting from the server's defaults; a run or a sweep.

The form starts from GET /spec/defaults (what an empty submission gets, equal to `fedgen
validate` of an empty file) and is generated from GET /spec/schema, so an untouched form
submits exactly the defaults. Only the chosen algorithm's parameters are shown; every
other spec field is under "Advanced". The spec that will be sent is shown as YAML.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
import yaml

from dashboard import loaders, ui
from dashboard.client import LabClient
from dashboard.spec_form import (
    FormField,
    applies,
    build_spec,
    build_sweep,
    fields_from_schema,
    parse_list,
    split_errors,
    sweep_size,
)

ERR_KEY = "submit_errors"
UNSET = "— profile's choice —"


@st.cache_data(ttl=300, show_spinner=False)
def _form_source(url: str, token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(defaults, schema) from the server: the one source of the form's fields and values."""
    with LabClient(url, token) as c:
        return c.spec_defaults(), c.spec_schema()


st.title("Submit")
url, token = ui.connection()
defaults, schema = ui.call(_form_source, url, token)
FIELDS: list[FormField] = fields_from_schema(schema, defaults)

mode = st.radio(
    "What to submit", ["Single run", "Sweep"], horizontal=True, key="submit_mode",
    help="In a sweep, give comma-separated values for any field in the three columns: "
    "every combination becomes a run.",
)  # fmt: skip
sweep = mode == "Sweep"
errors: dict[str, str] = st.session_state.get(ERR_KEY, {})
local_errors: dict[str, str] = {}


def _bounds(f: FormField) -> dict[str, Any]:
    cast = int if f.kind == "int" else float
    out: dict[str, Any] = {}
    if f.minimum is not None:
        out["min_value"] = cast(f.minimum)
    if f.maximum is not None:
        out["max_value"] = cast(f.maximum)
    return out


def single(f: FormField, key: str) -> Any:
    """One value for `f` (None allowed where the schema allows it)."""
    if f.kind == "choice" or (f.kind == "bool" and f.nullable):
        options = list(f.choices) if f.kind == "choice" else [True, False]
        if f.nullable:
            options = [None, *options]
        return st.selectbox(
            f.label, options, index=options.index(f.default), key=key, help=f.help,
            format_func=lambda v: UNSET if v is None else str(v),
        )  # fmt: skip
    if f.kind == "bool":
        return st.checkbox(f.label, value=bool(f.default), key=key, help=f.help)
    if f.kind == "int":
        got = st.number_input(
            f.label, value=f.default, step=1, key=key, help=f.help, **_bounds(f),
            placeholder=UNSET if f.nullable else None,
        )  # fmt: skip
        return None if got is None else int(got)
    if f.kind == "float":
        got = st.number_input(
            f.label, value=None if f.default is None else float(f.default), format="%g", key=key,
            help=f.help, placeholder=UNSET if f.nullable else None, **_bounds(f),
        )  # fmt: skip
        return None if got is None else float(got)
    text = st.text_input(f.label, "" if f.default is None else str(f.default), key=key, help=f.help)
    return None if f.nullable and not text else text


def listed(f: FormField, key: str) -> list[Any]:
    """Sweep mode: a list of values for `f`."""
    if f.kind in ("choice", "bool"):
        options = list(f.choices) if f.kind == "choice" else [True, False]
        value: list[Any] = st.multiselect(
            f.label, options, default=[f.default], key=key, help=f.help
        )
        if not value:
            local_errors[f.path] = "pick at least one value"
        return value
    default = "0, 1, 2" if f.path == "seed" else str(f.default)
    text = st.text_input(f.label, default, key=key, help=f.help or "Comma-separated values")
    try:
        return parse_list(text, f.kind)
    except ValueError as exc:
        local_errors[f.path] = str(exc)
        return [f.default]


def widget(f: FormField) -> Any:
    """One input with its server-side error right below it (a list in sweep mode's columns)."""
    as_list = sweep and f.section != "advanced" and not f.nullable
    key = f"submit_{'sw' if as_list else 'one'}_{f.path}"
    value = listed(f, key) if as_list else single(f, key)
    msg = local_errors.get(f.path) or errors.get(f.path)
    if msg:
        st.markdown(f":red[**{f.path}**: {msg}]")
    return value


values: dict[str, Any] = {}
by_path = {f.path: f for f in FIELDS}
algo_field = by_path["algorithm.name"]
sections = {"data": "Data and partition", "algorithm": "Algorithm", "run": "Training"}
cols = st.columns(3)
with cols[1]:
    st.subheader(sections["algorithm"])
    values[algo_field.path] = widget(algo_field)
algos = values["algorithm.name"] if sweep else [values["algorithm.name"]]
shown = [f for f in FIELDS if f is not algo_field and applies(f, algos)]
for col, (section, title) in zip(cols, sections.items(), strict=True):
    with col:
        if section != "algorithm":
            st.subheader(title)
        for f in (x for x in shown if x.section == section):
            values[f.path] = widget(f)

with st.expander("Advanced: every other spec field"):
    st.caption(
        "Left at the server's defaults unless changed. Knobs set to "
        f"“{UNSET}” take the fidelity profile's value (docs/fidelity.md)."
    )
    advanced = [f for f in shown if f.section == "advanced"]
    groups: dict[str, list[FormField]] = {}
    for f in advanced:
        groups.setdefault(f.path.split(".")[0] if "." in f.path else "training", []).append(f)
    for name, members in groups.items():
        st.markdown(f"**{name}**")
        acols = st.columns(3)
        for i, f in enumerate(members):
            with acols[i % 3]:
                values[f.path] = widget(f)

with st.expander("Tags and note"):
    tags = st.text_input("Tags (comma-separated)", key="submit_tags")
    note = st.text_area("Note", key="submit_note")
    sweep_name = st.text_input("Sweep name", "sweep", key="submit_sweep_name", disabled=not sweep)

extra: dict[str, Any] = {"tags": [t.strip() for t in tags.split(",") if t.strip()], "note": note}

if sweep:
    lists = {k: (v if isinstance(v, list) else [v]) for k, v in values.items()}
    base, grid = build_sweep(lists, FIELDS, defaults)
    base.update(extra)
    body: dict[str, Any] = {"name": sweep_name, "base": base, "grid": grid}
    spec = base
    st.caption(f"This sweep expands to **{sweep_size(grid)}** runs.")
else:
    spec = {**build_spec(values, FIELDS, defaults), **extra}
    body = spec

st.subheader("What will be sent")
st.caption("Save as `spec.yaml` and run it locally with `fedgen run spec.yaml` (sweeps too).")
st.code(yaml.safe_dump(body, sort_keys=False), language="yaml")

top_errors = split_errors(errors, FIELDS)[1]
for field, msg in top_errors.items():
    st.error(f"{field}: {msg}")

b1, b2, _ = st.columns([1, 1, 4])
validate = b1.button("Validate", key="submit_validate")
submit = b2.button("Submit sweep" if sweep else "Submit run", type="primary", key="submit_go")

if (validate or submit) and local_errors:
    st.error("Fix the fields marked in red first.")
elif validate or submit:
    result = ui.call(ui.client().validate_spec, spec)
    if not result.ok:
        st.session_state[ERR_KEY] = result.errors
        st.rerun()
    st.session_state[ERR_KEY] = {}
    if validate:
        st.success("The spec is valid." + (" (base spec of the sweep)" if sweep else ""))
    elif sweep:
        created = ui.try_call(ui.client().create_sweep, sweep_name, base, grid)
        if created:
            loaders.runs.clear()
            loaders.sweeps.clear()
            st.success(f"Queued sweep {created.get('id')} with {created.get('count')} runs.")
    else:
        run = ui.try_call(ui.client().submit_run, spec)
        if run:
            loaders.runs.clear()
            st.session_state["live_run_id"] = run["id"]
            st.success(f"Queued run {run['id']}.")
            st.page_link(
                "app_pages/live.py", label="Watch it on the Live page", icon=":material/monitoring:"
            )
