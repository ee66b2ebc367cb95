"""Paper: every experiment of the paper as a study; launch it, follow it, read its verdicts.

One study at a time: what it reproduces, a Launch button (POST /studies/{name}), the
progress of its sweep (and why its queued runs wait, the API's waiting_reason), and its table beside the paper's, each cell with ours (mean ± std, n),
the paper's, Δ and a verdict. The view lives in the URL (`?study=table1&dataset=...&seeds=1
&rounds=50&sweep=<id>`; defaults left out), so a reload or a link keeps it. While the sweep's
runs are queued or running the progress and the tables refresh by themselves (a fragment),
and stop once every run has ended.

The dataset picker marks the datasets no live worker can load (GET /workers, as the Submit
form does: `worker_offer`) and starts on one a worker has; launching a study no live worker
can start asks for a confirmation that says why its runs would wait.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import streamlit as st

from dashboard import loaders, runs_view, study_view, ui
from dashboard.client import ApiError
from dashboard.worker_offer import Offer, offer
from fedgen.csv_cells import frame_csv
from fedgen.status import ACTIVE
from fedgen.studies import format_duration

REFRESH_S = 3

st.title("Paper")
url, token = ui.connection()

studies = ui.call(loaders.studies, url, token)
by_name = {s["name"]: s for s in studies}
names = list(by_name)
wanted = st.query_params.get("study")
name: str = st.selectbox(
    "Study", names, index=names.index(wanted) if wanted in by_name else 0, key="study_name",
    format_func=lambda n: f"{n} · {by_name[n]['title']}",
)  # fmt: skip
if wanted != name:  # another study: the old one's dataset and sweep do not apply
    st.query_params.from_dict({"study": name})
info = by_name[name]
about = st.empty()  # what it reproduces, on the dataset picked below
st.caption(f"Statistic: {info['statistic_text']}. Study version {info['version']}.")
if info["notes"]:
    with st.expander("Notes"):
        for note in info["notes"]:
            st.markdown(f"- {note}")


def workers_offer() -> tuple[Offer | None, str]:
    """What the live workers can load for a study's runs (the cpu queue: a study's specs name
    no device); (None, why) when the workers cannot be read."""
    try:
        workers = loaders.workers(url, token)
    except ApiError as exc:
        why = f"The live workers could not be read ({exc.message}): datasets are not checked."
        return None, why
    return offer(workers, "cpu"), ""


# -- launch ----------------------------------------------------------------------------
OFFER, offer_unknown = workers_offer()
c1, c2, c3 = st.columns(3)
datasets = list(info["datasets"])
paper_dataset = str(info["paper_dataset"])
ui.from_url(
    f"study_dataset_{name}",
    "dataset",
    study_view.default_dataset(datasets, paper_dataset, OFFER),
    choices=datasets,
)
dataset: str = c1.selectbox(
    "Dataset",
    datasets,
    key=f"study_dataset_{name}",
    format_func=lambda d: study_view.dataset_label(d, paper_dataset, OFFER),
    help="The paper's dataset when a live worker has it, else one a worker has; only the "
    "paper's dataset has paper numbers. A dataset no live worker has is marked.",
)
defaults = info["defaults"]
ui.from_url(f"study_seeds_{name}", "seeds", defaults["seeds"], int, choices=list(range(1, 11)))
ui.from_url(
    f"study_rounds_{name}", "rounds", defaults["rounds"], int, choices=list(range(1, 10_001))
)
seeds = int(c2.number_input("Seeds", 1, 10, key=f"study_seeds_{name}"))
rounds = int(c3.number_input("Rounds", 1, 10_000, key=f"study_rounds_{name}"))
# The overrides as the URL keeps them (defaults left out); the sweep is added below.
view: dict[str, Any] = {
    "study": name,
    "dataset": dataset if dataset != paper_dataset else None,
    "seeds": seeds if seeds != defaults["seeds"] else None,
    "rounds": rounds if rounds != defaults["rounds"] else None,
}
definition = ui.call(loaders.study, url, token, name, dataset, seeds, rounds)
about.markdown(definition["reproduces"])
st.markdown(
    f"**{definition['runs']}** runs · estimated CPU time "
    f"**{format_duration(definition['est_cpu_s'])}** on one core (an estimate from measured "
    "per-algorithm round times; the workers' cores divide it)."
)
with st.expander("The sweep it creates"):
    st.json(definition["sweep"], expanded=False)


def may_launch() -> bool:
    """Whether the Launch button may go: a dataset no live worker has needs the confirmation
    that says why the runs would wait (the button is off until it is ticked)."""
    block = study_view.launch_block(OFFER, dataset, int(definition["runs"]))
    if block is None:
        if OFFER is None:
            st.caption(offer_unknown)
        elif OFFER.notice():
            st.info(OFFER.notice(), icon=":material/info:")
        return True
    st.warning(block, icon=":material/block:")
    return st.checkbox(
        f"Launch anyway: its {definition['runs']} runs wait in the queue until a worker "
        f"that has {dataset} is up",
        key=f"study_wait_ok_{name}_{dataset}",
    )


allowed = may_launch()
if st.button("Launch study", key="study_launch", type="primary", disabled=not allowed):
    launched = ui.try_call(
        ui.client().launch_study, name, dataset=dataset, seeds=seeds, rounds=rounds
    )
    if launched:
        loaders.study.clear()
        st.session_state[f"study_sweep_{name}"] = launched["sweep"]["id"]  # show it
        st.success(
            f"Queued study sweep {launched['sweep']['name']}: {launched['runs']} runs.",
            icon=":material/check:",
        )
        definition = ui.call(loaders.study, url, token, name, dataset, seeds, rounds)

# -- progress and table ---------------------------------------------------------------------
sweeps: list[dict[str, Any]] = definition.get("launched") or []
if not sweeps:
    ui.to_url(view)
    st.info("Not launched yet: the paper's numbers for this study are below.")
    st.subheader("The paper")
    st.dataframe(
        study_view.paper_matrix(definition["rows"], definition["columns"], definition["paper"]),
        key="study_paper_only",
    )
    st.stop()

now = datetime.now(UTC)
tz = runs_view.zone(st.context.timezone)
labels = {s["sweep_id"]: study_view.sweep_label(s, now, tz) for s in sweeps}
ids = list(labels)
CHOSEN = f"study_sweep_{name}"
# The picker's labels say runs done/total; Streamlit's frontend does not always redraw a kept
# select box whose labels alone changed, so its key follows the done counts (the choice is
# carried over in CHOSEN).
done_counts = "-".join(str(study_view.done(s)) for s in sweeps)
PICK = f"study_sweep_pick_{name}_{done_counts}"
if st.session_state.get(PICK) not in labels:  # a new picker: the last choice, else the link's
    wanted_sweep = st.session_state.get(CHOSEN) or st.query_params.get("sweep")
    st.session_state[PICK] = wanted_sweep if wanted_sweep in labels else ids[0]
sweep_id: str = st.selectbox("Launched sweep", ids, key=PICK, format_func=lambda i: labels[i])
st.session_state[CHOSEN] = sweep_id
ui.to_url({**view, "sweep": sweep_id})
sweep = next(s for s in sweeps if s["sweep_id"] == sweep_id)
SEEN = f"study_ended_{sweep_id}"  # the ended count the last full rerun was made for


def tables(results: dict[str, Any]) -> None:
    """Verdict counts, ours beside the paper's, and the cells one by one."""
    if results.get("sweep_version") not in (None, info["version"]):
        st.warning(
            f"This sweep was launched as version {results['sweep_version']} of the study; "
            f"its table is read with version {info['version']}."
        )
    counts = study_view.verdict_counts(results)
    st.markdown(
        " · ".join(
            f"**{counts[v]}** {v}"
            for v in ("within", "better", "worse", "no paper number", "no runs yet", "reference")
            if counts.get(v)
        )  # fmt: skip
    )
    unit = results["unit"]
    # Side by side when narrow; a wide table (Table 1's seven algorithms) gets the full width.
    wide = len(results["columns"]) > 3
    left, right = (st.container(), st.container()) if wide else st.columns(2)
    left.subheader(f"Ours ({unit})")
    left.dataframe(study_view.ours_matrix(results), key="study_ours")
    right.subheader(f"The paper ({unit})")
    paper_cells = [
        {"row": c["row"], "column": c["column"], "mean": c["paper_mean"], "std": c["paper_std"]}
        for c in results["cells"]
        if c["paper_mean"] is not None
    ]
    right.dataframe(
        study_view.paper_matrix(results["rows"], results["columns"], paper_cells),
        key="study_paper",
    )
    st.subheader("Cell by cell")
    cells = study_view.cells_frame(results)
    st.dataframe(
        cells.style.map(study_view.verdict_style, subset=["verdict"]),
        hide_index=True,
        key="study_cells",
    )
    st.caption(
        f"{results['statistic_text']}. Verdict: within the paper's ± (|Δ| ≤ the paper's std), "
        "better or worse beyond it; 'no paper number' where the paper has no such cell; "
        "n: finished runs of the cell out of its runs."
    )
    st.download_button(
        "CSV", frame_csv(cells), f"study-{name}-{results['dataset']}.csv", "text/csv",
        key="study_csv",
    )  # fmt: skip


def panel() -> None:
    """Progress and tables (a fragment: reruns by itself while the sweep's runs are active)."""
    runs = ui.call(loaders.runs, url, token, sweep_id=sweep_id)
    statuses = [str(r.get("status")) for r in runs]
    total = len(runs) or int(sweep["count"])
    fraction, text = study_view.progress(study_view.status_counts(statuses), total)
    active = any(s in ACTIVE for s in statuses)
    st.progress(fraction, text=text + (f" · refreshing every {REFRESH_S} s" if active else ""))
    waiting = study_view.waiting_note(runs)
    if waiting:
        st.warning(waiting, icon=":material/hourglass_empty:")
    ended = sum(s not in ACTIVE for s in statuses)
    if ended != study_view.done(sweep) and st.session_state.get(SEEN) != ended:
        # A run ended (or every run did): the whole page again, so the picker's count follows
        # and, once all ended, the timer stops.
        st.session_state[SEEN] = ended
        loaders.study.clear()
        loaders.study_results.clear()
        st.rerun(scope="app")
    results = ui.try_call(loaders.study_results, url, token, name, sweep_id)
    if results is not None:
        tables(results)


in_flight = int(sweep["count"]) > study_view.done(sweep)
st.fragment(run_every=f"{REFRESH_S}s" if in_flight else None)(panel)()
