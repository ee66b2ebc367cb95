"""Inspect: a run's partition (per-user label histogram) and FedGen generator checkpoints (PCA).

The view lives in the URL: `?run=<id>&rounds=1,50,100&per_class=50&seed=0`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import api_client, charts, live_view, loaders, run_picker, url_state
from dashboard.inspect_page.latents import (
    LOADER_MISSING,
    every_class_in_legend,
    every_class_on_axis,
    generator_api,
    latent_points,
)
from fedgen import specdict
from fedgen.algorithms.registry import algorithms, find_algorithm
from fedgen_lab.errors import LabError, LabNotFound
from vocab.schemas.runs import RunInfoPublic, RunPublic


def _linked_run_gone(url: str, token: str) -> None:
    """Stop with a note when the URL names a deleted run, rather than show another run."""
    linked = run_picker.linked_run_id()
    if not linked:
        return
    try:
        loaders.run(url, token, str(linked))
    except LabNotFound:
        st.warning(live_view.gone_note(str(linked)), icon=":material/delete:")
        st.page_link("app_pages/runs.py", label="Runs", icon=":material/table_rows:")
        st.stop()
    except LabError:
        pass  # said by the picker's own call


def partition(url: str, token: str, run_id: str) -> None:
    """The per-user label histogram and sample counts, once the run has started."""
    st.header("Partition")
    try:
        info: RunInfoPublic | None = loaders.info(url, token, run_id)
    except LabNotFound:
        info = None  # the API answers 404 until the run has started
    except LabError as exc:
        api_client.show_error(exc)
        info = None
    if info is None or not info.label_histogram:
        st.info("This run has not started yet: the partition is recorded when it starts.")
        return
    st.caption(
        f"Fingerprint `{info.partition_fingerprint}` · {info.num_users} users · "
        f"{info.num_classes} classes · device {info.device}"
    )
    heatmap = every_class_on_axis(charts.label_heatmap(info.label_histogram))
    st.plotly_chart(heatmap, key="inspect_heatmap")
    sizes = pd.DataFrame(
        {"train": info.train_sizes or [], "test": info.test_sizes or []}
    ).rename_axis("user")
    with st.expander("Samples per user"):
        st.dataframe(sizes, key="inspect_sizes")


def generator_rounds(url: str, token: str, run_id: str, run: RunPublic) -> pd.DataFrame:
    """The run's generator checkpoints; stops the page with a note when there is none to show."""
    st.header("Generator")
    algorithm = specdict.get_dotted(run.spec, "algorithm.name")
    decl = find_algorithm(algorithm)
    if decl is None or not decl.has_generator:
        with_one = ", ".join(d.label for d in algorithms() if d.has_generator)
        st.info(f"Generator checkpoints exist for {with_one} runs only.")
        st.stop()
    ckpts = api_client.call(loaders.checkpoints, url, token, run_id)
    gens = ckpts[ckpts["kind"] == "generator"]
    if gens.empty:
        st.info(
            "No generator checkpoints yet (written every `checkpoint_every` rounds and at the end)."
        )
        st.stop()
    if generator_api() is None:
        st.warning(LOADER_MISSING)
        st.stop()
    return gens


def pick_view(run_id: str, rounds: list[int]) -> tuple[list[int], int, int]:
    """Rounds, samples per class and seed, seeded from the URL and written back to it."""
    default = sorted({rounds[0], rounds[len(rounds) // 2], rounds[-1]})
    url_rounds = [int(r) for r in st.query_params.get("rounds", "").split(",") if r.isdigit()]
    if "inspect_rounds" not in st.session_state:
        st.session_state["inspect_rounds"] = [r for r in url_rounds if r in rounds][:4] or default
    picked = st.multiselect(
        "Rounds",
        rounds,
        key="inspect_rounds",
        max_selections=4,
        help="The rounds with a generator checkpoint; round r is the model after r aggregations "
        "(docs/metrics.md, How rounds are counted).",
    )
    c1, c2 = st.columns(2)
    url_state.from_url("inspect_per_class", "per_class", 50, int, choices=list(range(10, 201)))
    per_class = c1.slider("Samples per class", 10, 200, key="inspect_per_class")
    url_state.from_url("inspect_seed", "seed", 0, int, choices=list(range(10_001)))
    seed = int(c2.number_input("Sampling seed", 0, 10_000, key="inspect_seed"))
    st.query_params.update(
        {
            "run": run_id,
            "rounds": ",".join(str(r) for r in picked),
            "per_class": str(per_class),
            "seed": str(seed),
        }
    )
    return picked, per_class, seed


def latents(url: str, token: str, run_id: str, gens: pd.DataFrame) -> None:
    """The PCA of generated latents at the picked rounds."""
    picked, per_class, seed = pick_view(run_id, gens["round"].tolist())
    if not picked:
        return
    ids_by_round = dict(zip(gens["round"], gens["id"], strict=True))
    blobs = {
        r: api_client.call(loaders.checkpoint_bytes, url, token, run_id, str(ids_by_round[r]))
        for r in picked
    }
    try:
        points = latent_points(blobs, per_class, seed)
    except Exception as exc:  # a corrupt or incompatible checkpoint must not crash the page
        st.error(f"Could not load the generator checkpoint: {exc}")
        st.stop()
    st.plotly_chart(every_class_in_legend(charts.latent_scatter(points)), key="inspect_latents")
    st.caption(
        "Each panel is its own PCA of the generated latents; classes separating = a useful teacher."
    )


def render() -> None:
    """The page: pick a run, then its partition and its generator's latents."""
    st.title("Inspect")
    url, token = api_client.connection()
    _linked_run_gone(url, token)
    run_id, by_id = run_picker.pick_run(url, token, key="inspect_run")
    partition(url, token, run_id)
    gens = generator_rounds(url, token, run_id, by_id[run_id])
    latents(url, token, run_id, gens)


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
