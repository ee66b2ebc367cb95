"""Submit: a form built from the spec's schema, starting from the server's defaults; a run or a sweep.

The form starts from GET /spec/defaults (equal to `fedgen validate` of an empty file) with
the lab's new-run defaults over it (`execution: auto`: dashboard.spec_form.form_start) and is
generated from GET /spec/schema, so an untouched form submits exactly what an empty
submission gets. Only the chosen algorithm's parameters are shown, and the
folder's fields (data.folder: path, classes as a count or names, channels, image size) only
for the `folder` dataset, the synthetic samples and classes only for `synthetic`
(FormField.only, dashboard.conditional_fields); every other spec field is under "Advanced".
The spec that will be sent is shown as YAML, without the fields left at a null default
(dashboard.submit_page.spec_build: the API gives a missing field the same null).

What is shown is what is sent: inputs take any value and a value outside the schema's limits
is named under its field ("rounds: must be at least 1"); Validate and Submit refuse while any
field is refused, and validate or send exactly the YAML shown. Datasets no live worker can
load (GET /workers) are marked in the picker and refused, unless the spec names its own
data.root or data.download.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import streamlit as st
import yaml
from pydantic import ValidationError

from dashboard import api_client, loaders
from dashboard.conditional_fields import (
    ALGORITHM,
    beside_their_field,
    names_text,
    parse_names,
    sweeps_whole,
)
from dashboard.spec_form import (
    FormField,
    fields_from_schema,
    split_errors,
    text_field,
    text_fields,
)
from dashboard.spec_schema import SchemaNode
from dashboard.submit_page import submitted
from dashboard.submit_page.form_checks import check, read_list, read_tags, refusals
from dashboard.submit_page.spec_build import applies, build_spec, build_sweep, sweep_size
from dashboard.worker_offer import Offer, offer
from fedgen.spec import SpecError, format_validation_error
from fedgen.specdict import get_dotted
from fedgen.sweep import SweepSpec, expand
from fedgen_lab.errors import LabError

ERR_KEY = "submit_errors"  # a Judged: the body the API judged and its field -> message errors


@dataclass(frozen=True)
class Judged:
    """The body last sent to the API and what it said of it (field -> message)."""

    body: dict[str, Any]
    errors: dict[str, str]


UNSET = "— profile's choice —"
CARRIED_KEY = "submit_carried"  # the widget keys carry_values set in this run (held_value)


def _forget() -> None:
    """A widget changed: the API's errors and the last submission were about another body."""
    st.session_state.pop(ERR_KEY, None)
    submitted.forget()


def _now(defaults: dict[str, Any], path: str) -> Any:
    """A single-value field's current value, before its widget is drawn (read from its state)."""
    return st.session_state.get(f"submit_one_{path}", get_dotted(defaults, path))


def sweepable(f: FormField) -> bool:
    """Whether sweep mode gives `f` a list (see Form.in_list)."""
    return f.section != "advanced" and not f.nullable and not sweeps_whole(f)


def carry_values(fields: list[FormField], to_sweep: bool) -> None:
    """The Single run / Sweep switch's callback: the other mode's inputs start from what this
    mode's hold (their widgets are not drawn after the switch, so Streamlit would forget
    them). A single value becomes a one-value list; a list gives its first value, as typed."""
    state = st.session_state
    carried: set[str] = set()
    for f in fields:
        if not sweepable(f):
            continue  # the same widget (submit_one_...) in both modes: kept as it is
        one, listed = f"submit_one_{f.form_key}", f"submit_sw_{f.form_key}"
        if to_sweep and one in state:
            value = state[one]
            if f.kind in ("choice", "bool"):
                state[listed] = [value]
                carried.add(listed)
            elif value is not None and f.kind != "names":
                state[listed] = str(value)
                carried.add(listed)
        elif not to_sweep and listed in state:
            value = state[listed]
            if f.kind in ("choice", "bool"):
                if value:
                    state[one] = value[0]
                    carried.add(one)
                continue
            first, problem = read_list(str(value), f)
            if first and problem is None and f.kind in ("int", "float", "str"):
                state[one] = first[0]
                carried.add(one)
    state[CARRIED_KEY] = carried


def held_value(key: str, default: Any) -> Any:
    """What a widget starts from: the value its state holds, else the form's default.

    A held value is passed again as the widget's default rather than None: a browser that
    draws the widget afresh (its own copy of the state dropped after a rerun cut short, seen
    under a loaded CI) shows the default and sends it back, so None would empty the box and
    the next click would send "is required" for a field the member never touched. The one
    exception is a value carry_values set through the Session State API this run: that value
    wins anyway, and Streamlit warns when a widget set so is also given a default.
    """
    if key in carried():
        return None
    return st.session_state[key] if key in st.session_state else default


def _switched(fields: list[FormField]) -> None:
    """The mode radio changed: carry the values over, forget the API's errors."""
    carry_values(fields, st.session_state.get("submit_mode") == "Sweep")
    _forget()


def workers_offer(url: str, token: str, defaults: dict[str, Any]) -> tuple[Offer | None, str]:
    """What the live workers can load for this spec's queue; (None, why) when unknown."""
    try:
        workers = loaders.workers(url, token)
    except LabError as exc:
        return (
            None,
            f"The live workers could not be read ({exc.message}): datasets are not checked.",
        )
    own_data = bool(_now(defaults, "data.root")) or bool(_now(defaults, "data.download"))
    return offer(workers, str(_now(defaults, "device") or "cpu"), any_worker=own_data), ""


@dataclass
class Form:
    """The form being drawn: its fields (from the server's schema and defaults), what the
    live workers offer, and the values and refusals gathered as each widget is drawn."""

    defaults: dict[str, Any]
    schema: SchemaNode
    found: Offer | None
    offer_unknown: str
    sweep: bool
    fields: list[FormField] = field(init=False)
    # field -> why the form refuses its value (nothing is sent)
    local_errors: dict[str, str] = field(default_factory=dict)
    # The API's answer about the body last validated; any change to the form forgets it.
    server_errors: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    # Each drawn field's picked values: a field with `only` is drawn when the field it belongs
    # to (algorithm.name, drawn first; data.name, drawn before data.folder.*) has one of them.
    picked: dict[str, list[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.fields = fields_from_schema(self.schema, self.defaults)

    @property
    def dataset_names(self) -> tuple[Any, ...]:
        """The server's datasets (its registry, plugins included), as its schema lists them."""
        return next((f.choices for f in self.fields if f.path == "data.name"), ())

    def dataset_label(self, value: Any) -> str:
        """A dataset option's label: 'mnist — no live worker has it' when none can load it."""
        if self.found is None or value not in self.dataset_names:
            return UNSET if value is None else str(value)
        return self.found.label(value)

    def dataset_problem(self, values: list[Any]) -> str | None:
        """The first chosen dataset no live worker can load, as the picker says it."""
        found, names = self.found, self.dataset_names
        if found is None:
            return None
        return next((r for v in values if v in names and (r := found.reason(v))), None)

    def in_list(self, f: FormField) -> bool:
        """Whether `f` takes a list: in sweep mode's columns, but a conditional section's
        fields (data.folder: one object, zipped with data.name) and nullable ones take one."""
        return self.sweep and sweepable(f)

    def draw(self, f: FormField) -> None:
        """`f`'s widget when it applies to what is picked so far; its value in `values`."""
        if applies(f, self.picked):
            value = self.values[f.form_key] = self.widget(f)
            self.picked[f.path] = value if self.in_list(f) else [value]

    def widget(self, f: FormField) -> Any:
        """One input with the reason it is refused right below it (a list in sweep mode)."""
        as_list = self.in_list(f)
        key = f"submit_{'sw' if as_list else 'one'}_{f.form_key}"
        value = self.listed(f, key) if as_list else single(f, key, self.dataset_label)
        chosen = value if as_list else [value]
        errors = self.local_errors
        if f.path not in errors and not as_list and (why := check(f, value)):
            errors[f.path] = why
        if f.path not in errors and (why := self.dataset_problem(chosen)):
            errors[f.path] = why
        msg = errors.get(f.path) or self.server_errors.get(f.path)
        if msg:
            st.markdown(f":red[{f.path}: {msg}]")
        if f.path == "data.name":
            self.dataset_caption()
        return value

    def listed(self, f: FormField, key: str) -> list[Any]:
        """Sweep mode: a list of values for `f`, as typed (a value that does not parse stays
        text)."""
        if f.kind in ("choice", "bool"):
            options = list(f.choices) if f.kind == "choice" else [True, False]
            start = held_value(key, [f.default])
            value: list[Any] = st.multiselect(
                f.label,
                options,
                default=None if start is None else [v for v in start if v in options],
                key=key,
                help=f.help,
                format_func=self.dataset_label,
                on_change=_forget,
            )
            if not value:
                self.local_errors[f.path] = "pick at least one value"
            return value
        default = held_value(key, "0, 1, 2" if f.path == "seed" else str(f.default))
        help_ = f"Comma-separated values. {f.help}"
        text = st.text_input(f.label, default, key=key, help=help_, on_change=_forget)
        values, problem = read_list(text or "", f)
        if problem:
            self.local_errors[f.path] = problem
        return values

    def dataset_caption(self) -> None:
        """Under the dataset picker: which datasets the live workers can load, or why unknown."""
        found = self.found
        if found is None:
            st.caption(self.offer_unknown)
        elif found.any_worker:
            st.caption(
                "data.root or data.download is set: any worker of the "
                f"{found.queue} queue may take it."
            )
        elif found.notice() is None and found.datasets is not None:
            have = ", ".join(d for d in self.dataset_names if d in found.datasets) or "none"
            st.caption(f"Live workers ({found.queue} queue) can load: {have}.")


def single(f: FormField, key: str, label: Callable[[Any], str]) -> Any:
    """One value for `f` (None allowed where the schema allows it), exactly as entered.

    Number inputs get no min/max: Streamlit would keep the last in-range value while showing
    the typed one in red, so the form would send a value it does not show; `check` refuses
    an out-of-range value instead, naming the limit.
    """
    common: dict[str, Any] = {"key": key, "help": f.help, "on_change": _forget}
    start = held_value(key, f.default)
    if f.kind == "choice" or (f.kind == "bool" and f.nullable):
        options = list(f.choices) if f.kind == "choice" else [True, False]
        if f.nullable:
            options = [None, *options]
        index = options.index(start) if start in options and key not in carried() else None
        return st.selectbox(f.label, options, index=index, format_func=label, **common)
    if f.kind == "names":  # a count ('3') or comma-separated names ('cat, dog, bird')
        shown = held_value(key, names_text(f.default))  # the state holds the text typed
        text = st.text_input(f.label, shown, placeholder="3, or cat, dog, bird", **common)
        return parse_names(text)
    if f.kind == "bool":
        return st.checkbox(f.label, value=bool(start), **common)
    placeholder = UNSET if f.nullable else None
    if f.kind == "int":
        return st.number_input(f.label, value=start, step=1, placeholder=placeholder, **common)
    if f.kind == "float":
        # %.10g: a typed 0.1234567 is shown as typed (%g would show 0.123457 and send more)
        got = st.number_input(
            f.label,
            value=None if start is None else float(start),
            format="%.10g",
            placeholder=placeholder,
            **common,
        )
        return None if got is None else float(got)
    text = st.text_input(f.label, None if start is None else str(start), **common)
    return None if f.nullable and not text else text


def carried() -> set[str]:
    """The widget keys carry_values set through the Session State API in this run."""
    return set(st.session_state.get(CARRIED_KEY, ()))


def combination_errors(sweep_body: dict[str, Any]) -> dict[str, str]:
    """Where a sweep's combinations break a rule ('grid.seed[2]: ...'); {} when all are valid."""
    try:
        expand(SweepSpec.model_validate(sweep_body), strict=True)
    except SpecError as exc:
        return dict(exc.errors)
    except ValidationError as exc:  # the grid's own limits (runs, values per field)
        return {f"sweep.{loc}": msg for loc, msg in format_validation_error(exc)}
    return {}


SECTIONS = {"data": "Data and partition", "algorithm": "Algorithm", "run": "Training"}


def columns_part(form: Form) -> None:
    """The three columns of main fields (the algorithm first: others depend on it)."""
    algo_field = next(f for f in form.fields if f.path == ALGORITHM)
    cols = st.columns(3)
    with cols[1]:
        st.subheader(SECTIONS["algorithm"])
        form.draw(algo_field)
    for col, (section, title) in zip(cols, SECTIONS.items(), strict=True):
        with col:
            if section != "algorithm":
                st.subheader(title)
            for f in beside_their_field(form.fields):  # the folder's fields under the dataset
                if f.section == section and f is not algo_field:
                    form.draw(f)


def advanced_part(form: Form) -> None:
    """Every other spec field, grouped by its first path part, three a row."""
    with st.expander("Advanced: every other spec field"):
        st.caption(
            "Left at the server's defaults unless changed. Knobs set to "
            f"“{UNSET}” take the fidelity profile's value (docs/fidelity.md)."
        )
        advanced = [f for f in form.fields if f.section == "advanced" and applies(f, form.picked)]
        groups: dict[str, list[FormField]] = {}
        for f in advanced:
            groups.setdefault(f.path.split(".")[0] if "." in f.path else "training", []).append(f)
        for name, members in groups.items():
            st.markdown(f"**{name}**")
            acols = st.columns(3)
            for i, f in enumerate(members):
                with acols[i % 3]:
                    form.draw(f)


def labels_part(form: Form) -> tuple[dict[str, Any], str]:
    """Tags, note and the sweep's name; returns ({tags, note}, sweep name)."""
    text = text_fields(form.schema)
    sweep_field = text_field(
        "name", SchemaNode.of(SweepSpec.model_json_schema()).properties["name"]
    )
    with st.expander("Tags and note"):
        tag = text["tags"]
        tags_text = st.text_input(
            "Tags (comma-separated)",
            key="submit_tags",
            help=f"Each tag: {tag.help}",
            on_change=_forget,
        )
        tags, tags_problem = read_tags(tags_text, tag, form.schema)
        note = st.text_area(
            "Note (every lab member can read it)",
            key="submit_note",
            help=f"Shown with the run on every member's Runs page. {text['note'].help}",
            on_change=_forget,
        )
        st.caption("Notes and tags are visible to every member of the lab.")
        sweep_name = st.text_input(
            "Sweep name",
            "sweep",
            key="submit_sweep_name",
            disabled=not form.sweep,
            help=sweep_field.help,
            on_change=_forget,
        )
        for path, problem in (
            ("tags", tags_problem),
            ("note", check(text["note"], note)),
            ("name", check(sweep_field, sweep_name) if form.sweep else None),
        ):
            if problem:
                form.local_errors[path] = problem
                st.markdown(f":red[{path}: {problem}]")
    return {"tags": tags, "note": note}, sweep_name


@dataclass(frozen=True)
class Body:
    """What the form sends: the body shown, the (base) spec validated, and a sweep's parts."""

    body: dict[str, Any]
    spec: dict[str, Any]
    sweep_name: str = ""
    base: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, Any] = field(default_factory=dict)


def build_body(form: Form, extra: dict[str, Any], sweep_name: str) -> Body:
    """The run's spec, or the sweep's name, base and grid, from the drawn values."""
    if not form.sweep:
        spec = {**build_spec(form.values, form.fields, form.defaults), **extra}
        return Body(spec, spec)
    # A list-valued single field (class names) stays one value: only listed fields are lists.
    lists = {
        f.form_key: form.values[f.form_key] if form.in_list(f) else [form.values[f.form_key]]
        for f in form.fields
        if f.form_key in form.values
    }
    base, grid = build_sweep(lists, form.fields, form.defaults)
    base.update(extra)
    st.caption(f"This sweep expands to **{sweep_size(grid)}** runs.")
    body = {"name": sweep_name, "base": base, "grid": grid}
    return Body(body, base, sweep_name, base, grid)


def preview_part(form: Form, sent: Body) -> None:
    """The YAML that will be sent, the API's errors that name no field, and the queue note."""
    st.subheader("What will be sent")
    errors = form.local_errors
    if errors:
        st.caption(
            f":red[Nothing is validated or sent while {', '.join(errors)} "
            f"{'is' if len(errors) == 1 else 'are'} refused (below).]"
        )
    st.caption("Save as `spec.yaml` and run it locally with `fedgen run spec.yaml` (sweeps too).")
    st.code(yaml.safe_dump(sent.body, sort_keys=False), language="yaml")
    for name, msg in split_errors(form.server_errors, form.fields)[1].items():
        st.error(f"{name}: {msg}")
    if form.found is not None and form.found.notice():
        st.warning(form.found.notice(), icon=":material/hourglass_empty:")


def send(sent: Body, validate: bool, sweep: bool) -> None:
    """Validate exactly the body shown, then say it is valid or submit it."""
    # The API validates the (base) spec; a sweep's every combination is expanded by the same
    # code the API runs on POST /sweeps (fedgen.sweep.expand).
    result = api_client.call(api_client.client().validate_spec, sent.spec)
    problems = result.errors if not result.ok else (combination_errors(sent.body) if sweep else {})
    if problems:
        st.session_state[ERR_KEY] = Judged(sent.body, dict(problems))
        st.rerun()
    st.session_state[ERR_KEY] = Judged(sent.body, {})
    if validate:
        st.success(
            f"The sweep is valid: all {sweep_size(sent.grid)} runs, as shown above."
            if sweep
            else "The spec is valid, exactly as shown above."
        )
    elif sweep:
        submit_sweep(sent)
    else:
        submit_run(sent.spec)
    # A valid spec the server still has doubts about (a folder its host cannot see): said, not
    # refused, since the worker that runs it may be on another host.
    for name, msg in result.warnings.items():
        st.warning(f"{name}: {msg}", icon=":material/warning:")


def submit_sweep(sent: Body) -> None:
    """POST /sweeps; the page says so until the form changes (submitted.show)."""
    created = api_client.try_call(
        api_client.client().create_sweep, sent.sweep_name, sent.base, sent.grid
    )
    if not created:
        return
    loaders.runs.clear()
    loaders.sweeps.clear()
    first = created.run_ids[0] if created.run_ids else None
    submitted.remember(submitted.Submitted(created.id, created.count, first))


def submit_run(spec: dict[str, Any]) -> None:
    """POST /runs; the page says so until the form changes (submitted.show)."""
    run = api_client.try_call(api_client.client().submit_run, spec)
    if not run:
        return
    loaders.runs.clear()
    submitted.remember(submitted.Submitted(run.id, None, run.id))


def render() -> None:
    """The page: mode, the fields, tags and note, the YAML, then Validate and Submit."""
    st.title("Submit")
    url, token = api_client.connection()
    # (defaults, schema) from the server: the one source of the form's fields and values.
    defaults, schema = api_client.call(loaders.spec_source, url, token)
    found, offer_unknown = workers_offer(url, token, defaults)
    mode = st.radio(
        "What to submit",
        ["Single run", "Sweep"],
        horizontal=True,
        key="submit_mode",
        on_change=_switched,
        args=(fields_from_schema(schema, defaults),),
        help="In a sweep, give comma-separated values for any field in the three columns: "
        "every combination becomes a run.",
    )
    form = Form(defaults, schema, found, offer_unknown, sweep=mode == "Sweep")
    judged: Judged | None = st.session_state.get(ERR_KEY)
    form.server_errors = dict(judged.errors) if judged else {}
    columns_part(form)
    advanced_part(form)
    extra, sweep_name = labels_part(form)
    sent = build_body(form, extra, sweep_name)
    st.session_state.pop(CARRIED_KEY, None)  # every widget is drawn: the carried values held
    preview_part(form, sent)
    b1, b2, _ = st.columns([1, 1, 4])
    validate = b1.button("Validate", key="submit_validate")
    submit = b2.button(
        "Submit sweep" if form.sweep else "Submit run", type="primary", key="submit_go"
    )
    if form.local_errors:
        # Nothing is validated or sent while a field is refused: the YAML is not sendable.
        what = "Not validated" if validate else "Not submitted" if submit else "Refused until fixed"
        st.error(f"**{what}**: fix these fields first.\n\n{refusals(form.local_errors)}")
    elif validate or submit:
        send(sent, validate, form.sweep)
    submitted.show()


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
