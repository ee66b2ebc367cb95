"""examples/notebooks/analysis.ipynb executed top to bottom (nbclient, an ipykernel child)
against a live lab (Postgres, Redis, the API and a worker as processes) holding a tiny sweep:
the sweep it takes (FEDGEN_SWEEP_ID, else the member's newest), its curves' figure and the
final model evaluated in the notebook, checked against what the lab recorded."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import fedgen_lab
from tests.support.factories import make_spec
from tests.support.live_lab import LiveLab, live_lab

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "notebooks" / "analysis.ipynb"
PLOTLY = "application/vnd.plotly.v1+json"

# The global model alone is what these runs evaluate (BN statistics averaged into it), and
# round R's accuracy is the `model` checkpoint's (after_aggregation): run.model() must score it.
BASE = make_spec(
    rounds=2,
    model={"bn_buffers": "average"},
    fidelity={"eval_timing": "after_aggregation"},
    tags=["notebook-test"],
)
GRID: dict[str, list[Any]] = {"algorithm.name": ["fedavg", "fedgen"], "seed": [0, 1]}


@pytest.fixture(scope="module")
def lab(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    with live_lab(pg_url, tmp_path_factory.mktemp("notebook-lab")) as running:
        yield running


@pytest.fixture(scope="module")
def sweeps(lab: LiveLab) -> tuple[fedgen_lab.Sweep, fedgen_lab.Sweep]:
    """(the tiny sweep the notebook reads: 2 algorithms x 2 seeds, every run succeeded; an
    older sweep of one cancelled run). The member's newest run, cancelled, is in no sweep."""
    client = fedgen_lab.connect(lab.url, lab.token)
    older = client.sweep("older", {**BASE, "rounds": 300}, {"seed": [5]})
    for run in older.run_objects():
        run.cancel()
    made = client.sweep("notebook", BASE, GRID)
    client.submit({**BASE, "rounds": 300, "seed": 9}).cancel()
    made.wait(timeout=400)
    assert made.state.status_counts == {"succeeded": 4}, made.state.status_counts
    return made, older.wait(timeout=300)


def _execute(lab: LiveLab, extra: list[str], **env: str) -> tuple[Any, Any]:
    """The notebook executed top to bottom in a fresh kernel with the lab's FEDGEN_API_URL /
    FEDGEN_TOKEN and `env`, then the `extra` cells: (the notebook's cells, the extra ones),
    outputs filled in. A cell that raises fails the test here."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    count = len(nb.cells)
    nb.cells += [nbformat.v4.new_code_cell(source) for source in extra]
    kernel_env = {k: v for k, v in os.environ.items() if k != "FEDGEN_SWEEP_ID"}
    kernel_env.update(lab.cli_env(), CUDA_VISIBLE_DEVICES="", **env)
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute(env=kernel_env)
    return nb.cells[:count], nb.cells[count:]


def _code_cells() -> list[Any]:
    """The committed notebook's code cells."""
    import nbformat

    return [c for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]


def _stdout(cells: Any) -> str:
    return "".join(
        out.get("text", "")
        for cell in cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "stream" and out.name == "stdout"
    )


def _figures(cells: Any) -> list[dict[str, Any]]:
    return [
        out["data"][PLOTLY]
        for cell in cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if PLOTLY in out.get("data", {})
    ]


def _values(array: Any) -> list[float]:
    """A plotly JSON array: a list, or numpy's bytes in base64 ({"dtype", "bdata"})."""
    if isinstance(array, dict):
        import base64

        import numpy as np

        array = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
    return [float(v) for v in array]


def _number(text: str, pattern: str) -> float:
    found = re.search(pattern, text)
    assert found is not None, f"{pattern!r} not in the notebook's output:\n{text}"
    return float(found.group(1))


def test_the_committed_notebook_has_no_outputs() -> None:
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= len(code) // 2  # explained


@pytest.mark.postgres
@pytest.mark.timeout(600)
def test_the_notebook_runs_top_to_bottom(
    lab: LiveLab, sweeps: tuple[fedgen_lab.Sweep, fedgen_lab.Sweep]
) -> None:
    sweep, older = sweeps
    # After the notebook, its take-a-sweep cell again: with FEDGEN_SWEEP_ID naming the older
    # sweep, then without it (the member's newest sweep: its newest run is in no sweep).
    take = next(c.source for c in _code_cells() if "FEDGEN_SWEEP_ID" in c.source)
    cells, again = _execute(
        lab,
        [
            f"os.environ['FEDGEN_SWEEP_ID'] = {older.id!r}\n{take}",
            f"del os.environ['FEDGEN_SWEEP_ID']\n{take}",
        ],
        FEDGEN_SWEEP_ID=sweep.id,
    )
    out = _stdout(cells)
    client = fedgen_lab.connect(lab.url, lab.token)

    assert f"({sweep.id}): 4 runs" in out
    assert f"({older.id}): 1 runs" in _stdout(again[:1])
    assert f"({sweep.id}): 4 runs" in _stdout(again[1:])

    # The figure: a mean line per algorithm and a ± std band, ending at the lab's table's
    # final mean and std over seeds.
    figures = _figures(cells)
    assert figures, "the notebook drew no figure"
    traces = figures[0]["data"]
    lines = {t["name"]: t for t in traces if t.get("name")}
    bands = {t["legendgroup"]: t for t in traces if t.get("fill") == "toself"}
    assert set(lines) == set(bands) == {"algorithm=fedavg", "algorithm=fedgen"}
    table = sweep.summary(group_by=["algorithm.name"]).set_index("label")
    for label, trace in lines.items():
        mean, std = table.loc[label, "final_mean"], table.loc[label, "final_std"]
        assert _values(trace["x"]) == [0, 1, 2]
        assert _values(trace["y"])[-1] == pytest.approx(mean, abs=1e-9)
        upper = _values(bands[label]["y"])[2]  # the band: upper edge forth, lower back
        assert upper == pytest.approx(mean + std, abs=1e-9)

    # The evaluated run: the sweep's best by final accuracy; its model, evaluated in the
    # notebook, scores what the lab recorded at its last round (accuracy and loss).
    found = re.search(r"^run: (\S+) ", out, re.MULTILINE)
    assert found is not None, out
    run = client.run(found.group(1))
    assert run.id in sweep.state.run_ids
    finals = [client.run(i).summary["final_acc"] for i in sweep.state.run_ids]  # type: ignore[index]
    assert run.summary is not None
    assert run.summary["final_acc"] == max(finals)
    last = run.metrics().iloc[-1]
    assert int(last["round"]) == BASE["rounds"]
    accuracy = _number(out, r"evaluated: accuracy=([0-9.]+)")
    loss = _number(out, r"evaluated: accuracy=[0-9.]+ loss=([0-9.]+)")
    assert accuracy == pytest.approx(float(last["test_acc"]), abs=1e-6)
    assert loss == pytest.approx(float(last["test_loss"]), rel=1e-5)
    assert "the model reproduces the recorded figures" in out
