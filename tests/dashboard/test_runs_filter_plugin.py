"""The Runs page's algorithm and dataset filters offer what the server knows (its schema, as
the Submit form does), not what the dashboard saw when it started: a plugin algorithm
installed on the server (examples/plugins/lrdecay, `tests.support.plugin_site`) after the page was
first opened is listed once its cached choices expire, and a link filtering by it keeps it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from dashboard import loaders
from tests.support.plugin_site import install_example, plugins_on_path

pytestmark = pytest.mark.slow  # a pip install of the example plugin


@pytest.mark.timeout(300)
def test_runs_filter_lists_a_plugin_algorithm(
    app_path: str, lab_env: dict[str, Any], tmp_path: Path
) -> None:
    # Prepare: the dashboard was started, and its Runs page opened, before the install.
    before = AppTest.from_file(app_path, default_timeout=30)
    before.run()
    site = install_example(tmp_path / "lrdecay")
    loaders.spec_source.clear()  # as a minute later: the page's cached choices have expired
    loaders.spec_choices.clear()
    try:
        with plugins_on_path(site):  # the in-process API (and this process) see the plugin
            # Execute
            at = AppTest.from_file(app_path, default_timeout=30)
            at.run()
            offered = list(at.selectbox(key="runs_alg").options)
            linked = AppTest.from_file(app_path, default_timeout=30)
            linked.query_params["algorithm"] = "fedavg-decay"
            linked.run()
    finally:
        st.cache_data.clear()  # no later page sees the plugin from the cache
    # Assert
    assert "fedavg-decay" not in before.selectbox(key="runs_alg").options
    assert not at.exception
    assert "fedavg-decay" in offered
    assert {"fedavg", "fedgen"} <= set(offered)
    assert "synthetic" in at.selectbox(key="runs_data").options
    assert not linked.exception
    assert linked.selectbox(key="runs_alg").value == "fedavg-decay"  # not dropped as unknown
    assert dict(linked.query_params) == {"algorithm": "fedavg-decay"}
