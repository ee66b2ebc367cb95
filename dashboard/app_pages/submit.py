"""Submit: build a spec with the paper's defaults, validate it on the server, queue a run or a sweep."""

from __future__ import annotations

from typing import Any

import streamlit as st
import yaml

from dashboard import loaders, ui
from dashboard.spec_form import (
    FIELDS,
    FormField,
    build_spec,
    build_sweep,
    parse_list,
    split_errors,
    sweep_size,
)

ERR_KEY = "submit_errors"

st.title("Submit")
mode = st.radio(
    "What to submit", ["Single run", "Sweep"], horizontal=True, key="submit_mode",
    help="In a sweep, give comma-separated values for any field: every combination becomes a run.",
)  # fmt: skip
sweep = mode == "Sweep"
errors: dict[str, str] = st.session_state.get(ERR_KEY, {})
local_errors: dict[str, str] = {}


def widget(f: FormField) -> Any:
    """One input (a list of values in sweep mode) with its server-side error right below it."""
    key = f"submit_{'sw' if sweep else 'one'}_{f.path}"
    if f.kind == "choice":
        if sweep:
            value: Any = st.multiselect(
                f.label, list(f.choices), default=[f.default], key=key, help=f.help
            )
            if not value:
                local_errors[f.path] = "pick at least one value"
        else:
            value = st.selectbox(
                f.label, list(f.choices), index=f.choices.index(f.default), key=key, help=f.help
            )
    elif sweep:
        default = "0, 1, 2" if f.path == "seed" else str(f.default)
        text = st.text_input(f.label, default, key=key, help=f.help or "Comma-separated values")
        try:
            value = parse_list(text, f.kind)
        except ValueError as exc:
            local_errors[f.path] = str(exc)
            value = [f.default]
    elif f.kind == "int":
        value = int(st.number_input(f.label, value=int(f.default), step=1, key=key, help=f.help))
    elif f.kind == "float":
        value = float(
            st.number_input(f.label, value=float(f.default), format="%g", key=key, help=f.help)
        )
    else:
        value = st.text_input(f.label, str(f.default), key=key, help=f.help)
    msg = local_errors.get(f.path) or errors.get(f.path)
    if msg:
        st.markdown(f":red[**{f.path}**: {msg}]")
    return value


values: dict[str, Any] = {}
sections = {"data": "Data and partition", "algorithm": "Algorithm", "run": "Training"}
cols = st.columns(3)
for col, (section, title) in zip(cols, sections.items(), strict=True):
    with col:
        st.subheader(title)
        for f in (x for x in FIELDS if x.section == section):
            values[f.path] = widget(f)

with st.expander("Tags and note"):
    tags = st.text_input("Tags (comma-separated)", key="submit_tags")
    note = st.text_area("Note", key="submit_note")
    sweep_name = st.text_input("Sweep name", "sweep", key="submit_sweep_name", disabled=not sweep)

algos = values["algorithm.name"] if sweep else [values["algorithm.name"]]
values = {
    k: v for k, v in values.items()
    if not any(f.path == k and f.only and not set(f.only) & set(algos) for f in FIELDS)
}  # fmt: skip
extra: dict[str, Any] = {"tags": [t.strip() for t in tags.split(",") if t.strip()], "note": note}

if sweep:
    base, grid = build_sweep(values)
    base.update(extra)
    body: dict[str, Any] = {"name": sweep_name, "base": base, "grid": grid}
    spec = base
    st.caption(f"This sweep expands to **{sweep_size(grid)}** runs.")
else:
    spec = {**build_spec(values), **extra}
    body = spec

top_errors = split_errors(errors)[1]
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

st.subheader("Spec as YAML")
st.caption("Save as `spec.yaml` and run it locally with `fedgen run spec.yaml` (sweeps too).")
st.code(yaml.safe_dump(body, sort_keys=False), language="yaml")
