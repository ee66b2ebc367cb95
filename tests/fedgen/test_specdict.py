"""Spec dictionaries: dotted set, deep merge, flatten, differing fields, group keys and labels;
the shared run statuses and version info."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fedgen.spec import parse_spec
from fedgen.specdict import (
    differing_fields,
    flatten,
    get_dotted,
    group_key,
    group_label,
    merge,
    set_dotted,
)
from fedgen.sweep import SweepSpec, expand
from fedgen.versions import versions
from vocab.run_names import run_label
from vocab.run_status import ACTIVE, RUN_STATUSES, TERMINAL

FEDGEN = {"name": "fedgen", "gen_batch_size": 64, "preset": "cnn1"}


def test_set_dotted_creates_parents_and_replaces_leaves() -> None:
    """Missing or non-mapping parents become mappings; siblings stay."""
    # Prepare
    d: dict[str, object] = {"partition": {"num_users": 5}, "data": "oops"}
    # Execute
    set_dotted(d, "partition.alpha", 0.1)
    set_dotted(d, "data.name", "mnist")
    set_dotted(d, "model.head.width", 3)
    # Assert
    assert d == {
        "partition": {"num_users": 5, "alpha": 0.1},
        "data": {"name": "mnist"},
        "model": {"head": {"width": 3}},
    }


def test_set_dotted_algorithm_rules() -> None:
    """A new algorithm name drops the old one's parameters; the same name keeps them."""
    # Prepare
    by_name = {"algorithm": dict(FEDGEN)}
    by_dotted_name = {"algorithm": dict(FEDGEN)}
    same = {"algorithm": dict(FEDGEN)}
    param = {"algorithm": dict(FEDGEN)}
    # Execute
    set_dotted(by_name, "algorithm", "fedavg")
    set_dotted(by_dotted_name, "algorithm.name", "fedprox")
    set_dotted(same, "algorithm", {"name": "fedgen", "gen_batch_size": 16})
    set_dotted(param, "algorithm.gen_batch_size", 8)
    # Assert
    assert by_name == {"algorithm": {"name": "fedavg"}}
    assert by_dotted_name == {"algorithm": {"name": "fedprox"}}
    assert same == {"algorithm": {**FEDGEN, "gen_batch_size": 16}}
    assert param == {"algorithm": {**FEDGEN, "gen_batch_size": 8}}


def test_set_dotted_copies_the_value() -> None:
    """A mapping set into two specs is not shared between them."""
    value = {"alpha": 0.1}
    a: dict[str, object] = {}
    set_dotted(a, "partition", value)
    value["alpha"] = 9.0
    assert a == {"partition": {"alpha": 0.1}}


def test_merge_is_deep_and_leaves_inputs_alone() -> None:
    """Nested changes merge key by key; neither input changes; the result shares nothing."""
    # Prepare
    base = {"partition": {"alpha": 0.1, "num_users": 20}, "tags": ["a"], "algorithm": FEDGEN}
    changes = {"partition": {"alpha": 1.0}, "seed": 3}
    before = json.dumps([base, changes], sort_keys=True)
    # Execute
    out = merge(base, changes)
    out["tags"].append("b")
    out["algorithm"]["preset"] = "cnn2"
    # Assert
    assert out["partition"] == {"alpha": 1.0, "num_users": 20}
    assert out["seed"] == 3
    assert json.dumps([base, changes], sort_keys=True) == before


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("fedgen", {"name": "fedgen"}),  # a name alone: that algorithm's defaults
        ({"name": "fedavg"}, {"name": "fedavg"}),
        ({"gen_batch_size": 16}, {**FEDGEN, "gen_batch_size": 16}),
        ({"name": "fedgen", "preset": "cnn2"}, {**FEDGEN, "preset": "cnn2"}),
    ],
)
def test_merge_algorithm(change: object, expected: dict[str, object]) -> None:
    """An algorithm by name, or naming another algorithm, replaces the block; else it merges."""
    assert merge({"algorithm": FEDGEN}, {"algorithm": change})["algorithm"] == expected


def test_flatten_and_get_dotted() -> None:
    """Nested dicts become dotted keys; lists become tuples; get_dotted reads a path."""
    spec = {"a": {"b": 1, "c": {"d": None}}, "tags": ["x"], "e": {}}
    assert flatten(spec) == {"a.b": 1, "a.c.d": None, "tags": ("x",)}
    assert get_dotted(spec, "a.b") == 1
    assert get_dotted(spec, "a.c.d", "missing") is None
    assert get_dotted(spec, "a.b.z", "missing") == "missing"
    assert get_dotted(spec, "nope") is None


def test_differing_fields_ignores_seed_and_absent_parameters() -> None:
    """Seeds never differ for grouping; another algorithm's parameters are not a difference."""
    # Prepare
    flats = [
        {"algorithm.name": "fedavg", "partition.alpha": 0.1, "seed": 0},
        {
            "algorithm.name": "fedgen",
            "algorithm.gen_batch_size": 32,
            "partition.alpha": 0.1,
            "seed": 1,
        },
        {
            "algorithm.name": "fedgen",
            "algorithm.gen_batch_size": 64,
            "partition.alpha": 1.0,
            "seed": 2,
        },
    ]
    # Execute / Assert
    assert differing_fields(flats) == [
        "algorithm.name",
        "algorithm.gen_batch_size",
        "partition.alpha",
    ]
    assert differing_fields(flats[1:], ["partition.alpha", "seed"]) == ["partition.alpha", "seed"]
    assert differing_fields(flats[:1]) == []
    # 1 and 1.0 are different values in a spec (int vs float field), as in JSON
    assert differing_fields([{"x": 1}, {"x": 1.0}]) == ["x"]


def test_group_key_equal_only_by_seed_tags_note() -> None:
    """Parsed specs and their JSON dicts give one key; a different alpha another."""
    # Prepare
    a = parse_spec({"seed": 0, "tags": ["x"], "note": "first"})
    b = parse_spec({"seed": 5, "checkpoint_every": 0})
    c = parse_spec({"partition": {"alpha": 1.0}})
    # Execute
    keys = [group_key(a), group_key(b), group_key(c), group_key(a.model_dump(mode="json"))]
    # Assert
    assert keys[0] == keys[1] == keys[3] != keys[2]
    assert json.loads(keys[0])["partition.alpha"] == a.partition.alpha
    assert "seed" not in json.loads(keys[0])


def test_group_key_by_chosen_fields() -> None:
    """Grouping by chosen fields: a field a spec lacks counts as null."""
    x = {"algorithm": {"name": "fedgen", "gen_batch_size": 32}, "seed": 0}
    y = {"algorithm": {"name": "fedavg"}, "seed": 0}
    assert group_key(x, ["seed"]) == group_key(y, ["seed"])
    assert json.loads(group_key(y, ["algorithm.gen_batch_size"])) == {
        "algorithm.gen_batch_size": None
    }


def test_labels() -> None:
    """Group labels use short names and plain floats; a run alone is named as every page names
    it (vocab.run_names: the algorithm's label, the dataset, α, the seed)."""
    assert group_label({"algorithm.name": "fedgen", "partition.alpha": 1.0, "lr": 0.01}) == (
        "algorithm=fedgen, alpha=1, lr=0.01"
    )
    assert group_label({}) == "all"
    spec = parse_spec({"data": {"name": "fashion-mnist"}, "partition": {"alpha": 0.1}, "seed": 2})
    assert run_label(spec.model_dump()) == "FedAvg · FMNIST · α=0.1 · s2"
    assert run_label({}) == "? · ? · α=? · s?"


def test_sweep_applies_grid_with_the_same_rules() -> None:
    """A sweep grid value is set_dotted onto a copy of the base (the base is not changed)."""
    # Prepare
    base = {"rounds": 2, "algorithm": {"name": "fedgen", "gen_batch_size": 16}}
    grid = {"algorithm": ["fedavg", {"name": "fedgen", "preset": "cnn1"}], "partition.alpha": [1]}
    # Execute
    specs = expand(SweepSpec(base=base, grid=grid))
    # Assert
    assert [s.algorithm.model_dump() for s in specs] == [
        parse_spec({"algorithm": {"name": "fedavg"}}).algorithm.model_dump(),
        parse_spec(
            {"algorithm": {"name": "fedgen", "gen_batch_size": 16, "preset": "cnn1"}}
        ).algorithm.model_dump(),
    ]
    assert all(s.partition.alpha == 1.0 for s in specs)
    assert base == {"rounds": 2, "algorithm": {"name": "fedgen", "gen_batch_size": 16}}


def test_statuses() -> None:
    """Active and terminal statuses split the one list."""
    assert set(ACTIVE) | set(TERMINAL) == set(RUN_STATUSES)
    assert not set(ACTIVE) & set(TERMINAL)


def test_versions_without_importing_torch() -> None:
    """The helper names fedgen, torch, numpy, python and does not load torch itself."""
    code = (
        "import sys, json; from fedgen.versions import versions; "
        "print(json.dumps([versions(), 'torch' in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    fresh, torch_loaded = json.loads(out)
    assert not torch_loaded
    assert list(fresh) == ["fedgen", "torch", "numpy", "python", "code"]
    assert versions()["python"] == fresh["python"]


@pytest.mark.slow  # a child process
def test_versions_of_a_run_name_its_cpu_kernels() -> None:
    """Once torch is loaded (a run), the record names the CPU kernels torch picked, which
    decide the last bits of a CPU run; ATEN_CPU_CAPABILITY overrides them."""
    code = "import json, torch; from fedgen.versions import versions; print(json.dumps(versions()))"
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    recorded = json.loads(out)
    assert recorded["cpu_capability"] == "DEFAULT"
    assert recorded["torch_threads"].isdigit()


def test_specdict_and_status_import_only_light_modules() -> None:
    """The dashboard may import these: neither pulls torch, numpy or pydantic."""
    code = (
        "import sys; import fedgen.specdict, vocab.run_status; "
        "print(sorted(m for m in ('torch', 'numpy', 'pydantic') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
