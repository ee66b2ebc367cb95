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

A study already launched opens on its sweep: that sweep's settings (read-only), a Cancel of
its queued and running runs (with a confirmation), its progress and tables; the launch form
comes back only when "Launch again" is ticked (a reopened link never offers a launch of
other settings as if it were the sweep shown).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import streamlit as st

from dashboard import api_client, loaders, study_view, times, url_state
from dashboard.worker_offer import Offer, offer
from fedgen.studies.costs import format_duration
from fedgen_lab.errors import LabError
from vocab.run_status import ACTIVE
from vocab.safe_csv import frame_csv
from vocab.schemas.studies import LaunchedSweep, StudyDefinition, StudyResults, StudySummary

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
        return api_client.call(
            loaders.study, self.url, self.token, self.name, self.dataset, self.seeds, self.rounds
        )


def pick_study(url: str, token: str) -> tuple[Chosen, Any]:
    """The study (from `?study=`), and a placeholder for what it reproduces."""
    studies = api_client.call(loaders.studies, url, token)
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
    except LabError as exc:
        why = f"The live workers could not be read ({exc.message}): datasets are not checked."
        return None, why
    return offer(workers, "cpu"), ""


def pick_overrides(c: Chosen, found: Offer | None) -> Chosen:
    """Dataset, seeds and rounds, seeded from the URL."""
    name, info = c.name, c.info
    c1, c2, c3 = st.columns(3)
    datasets = info.datasets
    paper_dataset = info.paper_dataset
    url_state.from_url(
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
    url_state.from_url(
        f"study_seeds_{name}", "seeds", defaults.seeds, int, choices=list(range(1, 11))
    )
    url_state.from_url(
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
    and the study's definition (a launch reruns the page, on the new sweep)."""
    found, offer_unknown = workers_offer(c.url, c.token)
    c = pick_overrides(c, found)
    definition = c.definition()
    describe(definition, about)
    allowed = may_launch(c, found, offer_unknown, definition)
    if not st.button("Launch study", key="study_launch", type="primary", disabled=not allowed):
        return c, definition
    launched = api_client.try_call(
        api_client.client().launch_study, c.name, dataset=c.dataset, seeds=c.seeds, rounds=c.rounds
    )
    if not launched:
        return c, definition
    loaders.study.clear()
    loaders.sweeps.clear()
    st.session_state[f"study_sweep_{c.name}"] = launched.sweep.id  # show it
    st.session_state[FLASH] = f"Queued study sweep {launched.sweep.name}: {launched.runs} runs."
    # The page again, on the new sweep, with "Launch again" unticked (a new key).
    st.session_state[f"study_again_n_{c.name}"] = (
        st.session_state.get(f"study_again_n_{c.name}", 0) + 1
    )
    st.rerun()


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
    paper_cells = study_view.paper_cells(results)
    if paper_cells:
        right.subheader(f"The paper ({unit})")
        right.dataframe(
            study_view.paper_matrix(results.rows, results.columns, paper_cells),
            key="study_paper",
        )
    else:  # a study of our own (Table 1 extended, tuned): a table of dashes says nothing
        right.caption("The paper has no number for any cell of this table.")
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
        f"{results.statistic_text}. {results.std_text}. "
        "Verdict: within the paper's ± (|Δ| ≤ the paper's std), "
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
    # Cost is a second table behind a toggle: the cell table stays one screen wide.
    if st.toggle("Show cost per run (MB, seconds)", key=f"study_cost_{name}"):
        costs = study_view.cost_frame(results)
        st.dataframe(costs, hide_index=True, key="study_costs")
        st.caption(
            "Per run of the cell (the runs its figure counts), mean ± seed std (ddof 1): MB "
            "up, down and total (10^6 bytes), the clients' training and the server's steps in "
            "seconds; evaluation not counted (docs/metrics.md, Cost)."
        )
        st.download_button(
            "Cost CSV",
            frame_csv(costs),
            f"study-{name}-{results.dataset}-cost.csv",
            "text/csv",
            key="study_cost_csv",
        )


def panel(c: Chosen, sweep: LaunchedSweep) -> None:
    """Progress and tables (a fragment: reruns by itself while the sweep's runs are active)."""
    sweep_id = sweep.sweep_id
    runs = api_client.call(loaders.runs, c.url, c.token, sweep_id=sweep_id)
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
    results = api_client.try_call(loaders.study_results, c.url, c.token, c.name, sweep_id)
    if results is not None:
        tables(c, results)


FLASH = "study_flash"  # what the last action did, said once after its rerun


@dataclass(frozen=True)
class Settings:
    """A launched sweep's settings, as it was launched (read from the sweep itself)."""

    dataset: str
    seeds: int | None
    rounds: int | None


def sweep_settings(c: Chosen, sweep: LaunchedSweep) -> Settings:
    """The dataset, seeds and rounds the sweep was launched with (its base and grid)."""
    found = next(
        (
            s
            for s in api_client.try_call(loaders.sweeps, c.url, c.token) or []
            if s.id == sweep.sweep_id
        ),
        None,
    )
    seeds = found.grid.get("seed") if found else None
    rounds = found.base.get("rounds") if found else None
    dataset = sweep.dataset or (found.base.get("data", {}).get("name") if found else None)
    return Settings(
        str(dataset or "?"),
        len(seeds) if isinstance(seeds, list) else None,
        rounds if isinstance(rounds, int) else None,
    )


def settings_part(sweep: LaunchedSweep, settings: Settings) -> None:
    """The shown sweep's settings, read-only (the form is only for launching again)."""
    seeds = "?" if settings.seeds is None else settings.seeds
    rounds = "?" if settings.rounds is None else settings.rounds
    st.markdown(
        f"**This sweep's settings** (read-only): dataset **{settings.dataset}** · "
        f"**{seeds}** seed{'' if seeds == 1 else 's'} · **{rounds}** rounds · "
        f"**{sweep.count}** runs · "
        f"launched by **{sweep.owner}**"
    )


def cancel_part(c: Chosen, sweep: LaunchedSweep) -> None:
    """Cancel the sweep's queued and running runs (its owner or an admin), after a
    confirmation that says how many and what happens to each."""
    runs = api_client.try_call(loaders.runs, c.url, c.token, sweep_id=sweep.sweep_id) or []
    active = [r for r in runs if r.status in ACTIVE and not r.cancel_requested]
    ask = f"study_cancel_ask_{sweep.sweep_id}"
    if not active:
        if st.session_state.pop(ask, None):  # they ended while the question was asked
            st.info("Nothing left to cancel: every run of this sweep has ended.")
        return
    me = api_client.try_call(loaders.me, c.url, c.token)
    if me is not None and not (me.is_admin or me.name == sweep.owner):
        st.caption(f"Only {sweep.owner} (its owner) or an admin can cancel this sweep.")
        return
    if not st.session_state.get(ask):
        if st.button(
            f"Cancel this sweep ({len(active)} queued or running runs)…", key="study_cancel"
        ):
            st.session_state[ask] = True
            st.rerun()
        return
    st.warning(
        f"Cancel the {len(active)} queued or running runs of {sweep.name}? Queued runs stop at "
        "once, running ones after their current round; finished runs are kept.",
        icon=":material/cancel:",
    )
    b1, b2, _ = st.columns([2, 2, 4])
    if b1.button(f"Yes, cancel {len(active)} runs", key="study_cancel_yes", type="primary"):
        refused = []
        client = api_client.client()
        for run in active:
            try:
                client.cancel_run(run.id)
            except LabError as exc:
                refused.append(f"{run.id[:8]}: {exc.message}")
        st.session_state.pop(ask, None)
        loaders.runs.clear()
        loaders.study.clear()
        st.session_state[FLASH] = f"Asked {len(active) - len(refused)} runs to stop." + (
            f" Refused: {'; '.join(refused)}." if refused else ""
        )
        st.rerun()
    if b2.button("No, keep them", key="study_cancel_no"):
        st.session_state.pop(ask, None)
        st.rerun()


def launched_view(c: Chosen, about: Any, sweeps: list[LaunchedSweep]) -> None:
    """A study already launched: the sweep shown (its settings, read-only, and Cancel), its
    progress and tables; launching another sweep only after "Launch again" is ticked."""
    sweep = pick_sweep(c.name, sweeps)
    settings = sweep_settings(c, sweep)
    settings_part(sweep, settings)
    cancel_part(c, sweep)
    overrides = [f for f in ("dataset", "seeds", "rounds") if st.query_params.get(f)]
    again = st.checkbox(
        "Launch again: a new sweep of this study, with the settings chosen below",
        key=f"study_again_{c.name}_{st.session_state.get(f'study_again_n_{c.name}', 0)}",
        # A link made on the launch form (overrides, no sweep) opens the form; Launch is
        # still its own click.
        value=bool(overrides) and not st.query_params.get("sweep"),
    )
    if again:
        c, _ = launch_part(c, about)
        url_state.to_url({**c.view(), "sweep": sweep.sweep_id})
    else:
        dataset = settings.dataset if settings.dataset in c.info.datasets else None
        shown = api_client.try_call(loaders.study, c.url, c.token, c.name, dataset, None, None)
        if shown is not None:
            about.markdown(shown.reproduces)
        url_state.to_url({"study": c.name, "sweep": sweep.sweep_id})
    in_flight = sweep.count > study_view.done(sweep)
    st.fragment(run_every=f"{REFRESH_S}s" if in_flight else None)(panel)(c, sweep)


def render() -> None:
    """The page: the study; a launched one's sweep (settings, Cancel, progress, table), else
    its launch form."""
    st.title("Paper")
    url, token = api_client.connection()
    c, about = pick_study(url, token)
    flash = st.session_state.pop(FLASH, None)
    if flash:
        st.success(flash, icon=":material/check:")
    launched = api_client.call(loaders.study, url, token, c.name, None, None, None).launched
    if launched:
        launched_view(c, about, launched)
        return
    c, definition = launch_part(c, about)  # a launch reruns the page on its sweep
    url_state.to_url(c.view())
    if not any(p.mean is not None for p in definition.paper):
        # A table of dashes says nothing: the paper ran this study on other data.
        st.info(f"Not launched yet. The paper reports no numbers for this study on {c.dataset}.")
        return
    st.info("Not launched yet: the paper's numbers for this study are below.")
    st.subheader("The paper")
    st.dataframe(
        study_view.paper_matrix(definition.rows, definition.columns, definition.paper),
        key="study_paper_only",
    )


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
