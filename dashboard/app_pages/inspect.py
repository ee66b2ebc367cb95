"""Inspect: a run's partition (per-user label histogram) and FedGen generator checkpoints (PCA)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboard import charts, loaders, ui
from dashboard.client import ApiError, ApiNotFound
from dashboard.latents import LOADER_MISSING, generator_api, latent_points

st.title("Inspect")
url, token = ui.connection()

run_id, by_id = ui.pick_run(url, token, key="inspect_run")

st.header("Partition")
try:
    info: dict[str, Any] | None = loaders.info(url, token, run_id)
except ApiNotFound:
    info = None  # the API answers 404 until the run has started
except ApiError as exc:
    ui.show_error(exc)
    info = None
if not info or not info.get("label_histogram"):
    st.info("This run has not started yet: the partition is recorded when it starts.")
else:
    st.caption(
        f"Fingerprint `{info.get('partition_fingerprint')}` · {info.get('num_users')} users · "
        f"{info.get('num_classes')} classes · device {info.get('device')}"
    )
    st.plotly_chart(charts.label_heatmap(info["label_histogram"]), key="inspect_heatmap")
    sizes = pd.DataFrame(
        {"train": info.get("train_sizes") or [], "test": info.get("test_sizes") or []}
    ).rename_axis("user")
    with st.expander("Samples per user"):
        st.dataframe(sizes, key="inspect_sizes")

st.header("Generator")
algorithm = ((by_id[run_id].get("spec") or {}).get("algorithm") or {}).get("name")
if algorithm != "fedgen":
    st.info("Generator checkpoints exist for FedGen runs only.")
    st.stop()
ckpts = ui.call(loaders.checkpoints, url, token, run_id)
gens = ckpts[ckpts["kind"] == "generator"]
if gens.empty:
    st.info(
        "No generator checkpoints yet (written every `checkpoint_every` rounds and at the end)."
    )
    st.stop()
if generator_api() is None:
    st.warning(LOADER_MISSING)
    st.stop()
rounds = gens["round"].tolist()
default = sorted({rounds[0], rounds[len(rounds) // 2], rounds[-1]})
picked = st.multiselect("Rounds", rounds, default=default, key="inspect_rounds", max_selections=4)
c1, c2 = st.columns(2)
per_class = c1.slider("Samples per class", 10, 200, 50, key="inspect_per_class")
seed = int(c2.number_input("Sampling seed", 0, 10_000, 0, key="inspect_seed"))
if picked:
    ids_by_round = dict(zip(gens["round"], gens["id"], strict=True))
    blobs = {
        r: ui.call(loaders.checkpoint_bytes, url, token, run_id, str(ids_by_round[r]))
        for r in picked
    }
    try:
        points = latent_points(blobs, per_class, seed)
    except Exception as exc:  # a corrupt or incompatible checkpoint must not crash the page
        st.error(f"Could not load the generator checkpoint: {exc}")
        st.stop()
    st.plotly_chart(charts.latent_scatter(points), key="inspect_latents")
    st.caption(
        "Each panel is its own PCA of the generated latents; classes separating = a useful teacher."
    )
