"""Fidelity knobs are declared once (`fedgen.knobs`): spec fields, resolution and the docs table."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedgen.algorithms.params import FedGenParams
from fedgen.fidelity import markdown_table, resolve
from fedgen.knobs import KNOBS
from fedgen.spec import ExperimentSpec, FidelitySpec, parse_spec

DOC = Path(__file__).resolve().parents[2] / "docs" / "fidelity.md"
BEGIN, END = "<!-- knobs:begin -->", "<!-- knobs:end -->"


def test_docs_table_matches_declarations() -> None:
    """docs/fidelity.md's table is `markdown_table()` (regenerate it after changing a knob)."""
    text = DOC.read_text()
    assert BEGIN in text, "docs/fidelity.md lost its knob-table markers"
    assert END in text, "docs/fidelity.md lost its knob-table markers"
    table = text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"
    assert table == markdown_table()


def test_every_knob_is_a_spec_field_where_declared() -> None:
    sections = {
        "fidelity": FidelitySpec,
        "fedgen": FedGenParams,
        "partition": type(ExperimentSpec().partition),
        "model": type(ExperimentSpec().model),
        "run": ExperimentSpec,
    }
    for knob in KNOBS:
        owner = sections[knob.home]
        assert owner.model_fields[knob.name].default is None, knob.name
        others = [h for h, cls in sections.items() if h != knob.home]
        assert all(knob.name not in sections[h].model_fields for h in others), knob.name


@pytest.mark.parametrize("profile", ["paper", "official"])
def test_profile_values_resolve(profile: str) -> None:
    """With nothing set, every knob of a FedGen run takes its declared profile value."""
    fid = resolve(parse_spec({"algorithm": {"name": "fedgen"}, "fidelity": {"profile": profile}}))
    for knob in KNOBS:
        assert getattr(fid, knob.name) == getattr(knob, profile), knob.name


def test_spec_value_wins_in_every_home() -> None:
    spec = parse_spec(
        {
            "algorithm": {"name": "fedgen", "generator_steps": 3},
            "fidelity": {"aggregation": "uniform"},
            "partition": {"test_protocol": "global"},
            "model": {"bn_buffers": "average"},
            "lr_decay": 0.5,
        }
    )
    fid = resolve(spec)
    assert (fid.generator_steps, fid.aggregation, fid.test_protocol, fid.bn_buffers) == (
        3,
        "uniform",
        "global",
        "average",
    )
    assert fid.lr_decay == 0.5
