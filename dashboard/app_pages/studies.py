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

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import streamlit as st

from api.schemas.studies import LaunchedSweep, StudyDefinition, StudyResults, StudySummary
from dashboard import loaders, study_view, times, ui
from dashboard.client import ApiError
from dashboard.worker_offer import Offer, offer
from fedgen.csv_cells import frame_csv
from fedgen.status import ACTIVE
from fedgen.studies.costs import format_duration

REFRESH_S = 3


@dataclass(frozen=True)
class Chosen:
    """The study and its overrides as picked, and the API they are read from."""

    url: str
    token: str
    name: str
    info: StudySummary
    dataset: str = ""
    seeds: int = 0
    rounds: int = 0

    def view(self) -> dict[str, Any]:
        """The overrides as the URL keeps them (defaults left out); the sweep is added later."""
        defaults = self.info.defaults
        return {
            "study": self.name,
            "dataset": self.dataset if self.dataset != self.info.paper_dataset else None,
            "seeds": self.seeds if self.seeds != defaults.seeds else None,
            "rounds": self.rounds if self.rounds != defaults.rounds else None,
        }

    def definition(self) -> StudyDefinition:
        """GET /studies/{name} with the overrides: its runs, cost, sweep and launched sweeps."""
        return ui.call(
            loaders.study, self.url, self.token, self.name, self.dataset, self.seeds, self.rounds
        )


def pick_study(url: str, token: str) -> tuple[Chosen, Any]:
    """The study (from `?study=`), and a placeholder for what it reproduces."""
    studies = ui.call(loaders.studies, url, token)
    by_name = {s.name: s for s in studies}
    names = list(by_name)
    wanted = st.query_params.get("study")
    name = str(
        st.selectbox(
            "Study",
            names,
            index=names.index(wanted) if wanted in by_name else 0,
            key="study_name",
            format_func=lambda n: f"{n} · {by_name[n].title}",
        )
    )
    if wanted != name:  # another study: the old one's dataset and sweep do not apply
        st.query_params.from_dict({"study": name})
    info = by_name[name]
    about = st.empty()  # what it reproduces, on the dataset picked below
    st.caption(f"Statistic: {info.statistic_text}. Study version {info.version}.")
    if info.notes:
        with st.expander("Notes"):
            for note in info.notes:
                st.markdown(f"- {note}")
    return Chosen(url, token, name, info), about


def workers_offer(url: str, token: str) -> tuple[Offer | None, str]:
    """What the live workers can load for a study's runs (the cpu queue: a study's specs name
    no device); (None, why) when the workers cannot be read."""
    try:
        workers = loaders.workers(url, token)
    except ApiError as exc:
        why = f"The live workers could not be read ({exc.message}): datasets are not checked."
        return None, why
    return offer(workers, "cpu"), ""


def pick_overrides(c: Chosen, found: Offer | None) -> Chosen:
    """Dataset, seeds and rounds, seeded from the URL."""
    name, info = c.name, c.info
    c1, c2, c3 = st.columns(3)
    datasets = info.datasets
    paper_dataset = info.paper_dataset
    ui.from_url(
        f"study_dataset_{name}",
        "dataset",
        study_view.default_dataset(datasets, paper_dataset, found),
        choices=datasets,
    )
    dataset = c1.selectbox(
        "Dataset",
        datasets,
        key=f"study_dataset_{name}",
        format_func=lambda d: study_view.dataset_label(d, paper_dataset, found),
        help="The paper's dataset when a live worker has it, else one a worker has; only the "
        "paper's dataset has paper numbers. A dataset no live worker has is marked.",
    )
    defaults = info.defaults
    ui.from_url(f"study_seeds_{name}", "seeds", defaults.seeds, int, choices=list(range(1, 11)))
    ui.from_url(
        f"study_rounds_{name}", "rounds", defaults.rounds, int, choices=list(range(1, 10_001))
    )
    seeds = int(c2.number_input("Seeds", 1, 10, key=f"study_seeds_{name}"))
    rounds = int(c3.number_input("Rounds", 1, 10_000, key=f"study_rounds_{name}"))
    return replace(c, dataset=str(dataset), seeds=seeds, rounds=rounds)


def describe(definition: StudyDefinition, about: Any) -> None:
    """What the study reproduces, its size and cost, and the sweep it would create."""
    about.markdown(definition.reproduces)
    st.markdown(
        f"**{definition.runs}** runs · estimated CPU time "
        f"**{format_duration(definition.est_cpu_s)}** on one core (an estimate from measured "
        "per-algorithm round times; the workers' cores divide it)."
    )
    with st.expander("The sweep it creates"):
        st.json(definition.sweep.model_dump(mode="json"), expanded=False)


def may_launch(
    c: Chosen, found: Offer | None, offer_unknown: str, definition: StudyDefinition
) -> bool:
    """Whether the Launch button may go: a dataset no live worker has needs the confirmation
    that says why the runs would wait (the button is off until it is ticked)."""
    block = study_view.launch_block(found, c.dataset, definition.runs)
    if block is None:
        if found is None:
            st.caption(offer_unknown)
        elif found.notice():
            st.info(found.notice(), icon=":material/info:")
        return True
    st.warning(block, icon=":material/block:")
    return st.checkbox(
        f"Launch anyway: its {definition.runs} runs wait in the queue until a worker "
        f"that has {c.dataset} is up",
        key=f"study_wait_ok_{c.name}_{c.dataset}",
    )


def launch_part(c: Chosen, about: Any) -> tuple[Chosen, StudyDefinition]:
    """The overrides, the study's description and its Launch button; returns the overrides
    and the study's definition (afresh after a launch)."""
    found, offer_unknown = workers_offer(c.url, c.token)
    c = pick_overrides(c, found)
    definition = c.definition()
    describe(definition, about)
    allowed = may_launch(c, found, offer_unknown, definition)
    if not st.button("Launch study", key="study_launch", type="primary", disabled=not allowed):
        return c, definition
    launched = ui.try_call(
        ui.client().launch_study, c.name, dataset=c.dataset, seeds=c.seeds, rounds=c.rounds
    )
    if not launched:
        return c, definition
    loaders.study.clear()
    st.session_state[f"study_sweep_{c.name}"] = launched.sweep.id  # show it
    st.success(
        f"Queued study sweep {launched.sweep.name}: {launched.runs} runs.",
        icon=":material/check:",
    )
    return c, c.definition()


def pick_sweep(name: str, sweeps: list[LaunchedSweep]) -> LaunchedSweep:
    """The launched sweep shown: the last choice, else the link's, else the newest."""
    now = datetime.now(UTC)
    tz = times.zone(st.context.timezone)
    labels = {s.sweep_id: study_view.sweep_label(s, now, tz) for s in sweeps}
    ids = list(labels)
    chosen = f"study_sweep_{name}"
    # The picker's labels say runs done/total; Streamlit's frontend does not always redraw a
    # kept select box whose labels alone changed, so its key follows the done counts (the
    # choice is carried over in `chosen`).
    done_counts = "-".join(str(study_view.done(s)) for s in sweeps)
    key = f"study_sweep_pick_{name}_{done_counts}"
    if st.session_state.get(key) not in labels:  # a new picker: the last choice, else the link's
        wanted_sweep = st.session_state.get(chosen) or st.query_params.get("sweep")
        st.session_state[key] = wanted_sweep if wanted_sweep in labels else ids[0]
    sweep_id = st.selectbox("Launched sweep", ids, key=key, format_func=lambda i: labels[i])
    st.session_state[chosen] = sweep_id
    return next(s for s in sweeps if s.sweep_id == sweep_id)


VERDICTS = ("within", "better", "worse", "no paper number", "no runs yet", "reference")


def tables(c: Chosen, results: StudyResults) -> None:
    """Verdict counts, ours beside the paper's, and the cells one by one."""
    version = c.info.version
    if results.sweep_version not in (None, version):
        st.warning(
            f"This sweep was launched as version {results.sweep_version} of the study; "
            f"its table is read with version {version}."
        )
    counts = study_view.verdict_counts(results)
    st.markdown(" · ".join(f"**{counts[v]}** {v}" for v in VERDICTS if counts.get(v)))
    unit = results.unit
    # Side by side when narrow; a wide table (Table 1's seven algorithms) gets the full width.
    wide = len(results.columns) > 3
    left, right = (st.container(), st.container()) if wide else st.columns(2)
    left.subheader(f"Ours ({unit})")
    left.dataframe(study_view.ours_matrix(results), key="study_ours")
    right.subheader(f"The paper ({unit})")
    paper_cells = study_view.paper_cells(results)
    right.dataframe(
        study_view.paper_matrix(results.rows, results.columns, paper_cells),
        key="study_paper",
    )
    cells_part(c.name, results)


def cells_part(name: str, results: StudyResults) -> None:
    """Each cell with ours, the paper's, Δ and its verdict, and their CSV."""
    st.subheader("Cell by cell")
    cells = study_view.cells_frame(results)
    st.dataframe(
        cells.style.map(study_view.verdict_style, subset=["verdict"]),
        hide_index=True,
        key="study_cells",
    )
    st.caption(
        f"{results.statistic_text}. Verdict: within the paper's ± (|Δ| ≤ the paper's std), "
        "better or worse beyond it; 'no paper number' where the paper has no such cell; "
        "n: finished runs of the cell out of its runs."
    )
    st.download_button(
        "CSV",
        frame_csv(cells),
        f"study-{name}-{results.dataset}.csv",
        "text/csv",
        key="study_csv",
    )


def panel(c: Chosen, sweep: LaunchedSweep) -> None:
    """Progress and tables (a fragment: reruns by itself while the sweep's runs are active)."""
    sweep_id = sweep.sweep_id
    runs = ui.call(loaders.runs, c.url, c.token, sweep_id=sweep_id)
    statuses = [r.status for r in runs]
    total = len(runs) or sweep.count
    fraction, text = study_view.progress(study_view.status_counts(statuses), total)
    active = any(s in ACTIVE for s in statuses)
    st.progress(fraction, text=text + (f" · refreshing every {REFRESH_S} s" if active else ""))
    waiting = study_view.waiting_note(runs)
    if waiting:
        st.warning(waiting, icon=":material/hourglass_empty:")
    ended = sum(s not in ACTIVE for s in statuses)
    seen = f"study_ended_{sweep_id}"  # the ended count the last full rerun was made for
    if ended != study_view.done(sweep) and st.session_state.get(seen) != ended:
        # A run ended (or every run did): the whole page again, so the picker's count follows
        # and, once all ended, the timer stops.
        st.session_state[seen] = ended
        loaders.study.clear()
        loaders.study_results.clear()
        st.rerun(scope="app")
    results = ui.try_call(loaders.study_results, c.url, c.token, c.name, sweep_id)
    if results is not None:
        tables(c, results)


def render() -> None:
    """The page: the study, its launch, then its sweep's progress and table."""
    st.title("Paper")
    url, token = ui.connection()
    c, about = pick_study(url, token)
    c, definition = launch_part(c, about)
    sweeps = definition.launched
    if not sweeps:
        ui.to_url(c.view())
        st.info("Not launched yet: the paper's numbers for this study are below.")
        st.subheader("The paper")
        st.dataframe(
            study_view.paper_matrix(definition.rows, definition.columns, definition.paper),
            key="study_paper_only",
        )
        st.stop()
    sweep = pick_sweep(c.name, sweeps)
    ui.to_url({**c.view(), "sweep": sweep.sweep_id})
    in_flight = sweep.count > study_view.done(sweep)
    st.fragment(run_every=f"{REFRESH_S}s" if in_flight else None)(panel)(c, sweep)


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
