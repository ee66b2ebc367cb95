"""One declaration per algorithm: the registry's checks, what derives from it, and the recipe
in docs/architecture.md naming exactly the files a built-in's declaration lives in."""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
from pathlib import Path
from typing import Literal

import pytest

from fedgen import paper
from fedgen.algorithms import registry
from fedgen.algorithms.decl import AlgorithmDecl
from fedgen.algorithms.params import AlgorithmParams
from fedgen.algorithms.registry import RegistryError, register_algorithm
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.studies.costs import estimate_cpu_s
from tests.support.fingerprint_cases import CASES
from tests.support.toy_algorithms import fedavg_under

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "docs" / "architecture.md"
BUILTIN_MODULE = ROOT / "fedgen" / "algorithms" / "builtin.py"


class ToyParams(AlgorithmParams):
    """A test-only algorithm."""

    name: Literal["toy"] = "toy"


TOY = fedavg_under("toy", ToyParams)


def _recipe_files() -> list[str]:
    text = RECIPE.read_text()
    section = text.split("## How to add an algorithm", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^- `([^`]+)`:", section, flags=re.MULTILINE)


def _relative(obj: object) -> str:
    return Path(inspect.getsourcefile(obj)).resolve().relative_to(ROOT).as_posix()  # type: ignore[arg-type]


def test_recipe_names_the_files_every_builtin_declaration_lives_in() -> None:
    files = _recipe_files()
    patterns = [
        re.compile("^" + re.escape(f).replace(re.escape("<name>"), r"[a-z][a-z0-9_]*") + "$")
        for f in files
    ]
    registered = BUILTIN_MODULE.read_text()
    assert 1 <= len(files) <= 3, files  # a built-in: at most 3 files outside the tests
    assert BUILTIN_MODULE.relative_to(ROOT).as_posix() in files
    for d in registry.builtin_algorithms():
        where = {
            "params": _relative(d.params_cls),
            "algorithm": _relative(d.load_class()),
        }
        for what, path in where.items():
            assert any(p.match(path) for p in patterns), (d.name, what, path, files)
        assert f'name="{d.name}"' in registered, d.name


def test_every_builtin_has_a_fingerprint_case() -> None:
    cased = {case["algorithm"]["name"] for case in CASES.values()}
    assert {d.name for d in registry.builtin_algorithms()} <= cased


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ms_per_round": math.nan}, "ms_per_round"),
        ({"ms_per_round": 0.0}, "ms_per_round"),
        ({"name": "fedavg"}, "already registered"),
        ({"name": "Toy!"}, "must match"),
        ({"name": "other"}, "must default to 'other'"),
        ({"colour": "red"}, "colour"),
        ({"shares": frozenset({"predictor"})}, "shares"),
        ({"algorithm_cls": "no.colon"}, "module:Class"),
        # the message names the base class's real home (not an old re-export's)
        (
            {"params_cls": dict},
            re.escape(f"must subclass {AlgorithmParams.__module__}.AlgorithmParams"),
        ),
    ],
)
@pytest.mark.usefixtures("algorithms_restored")
def test_a_bad_declaration_is_refused_at_registration(change: dict, message: str) -> None:
    with pytest.raises(RegistryError, match=message):
        register_algorithm(dataclasses.replace(TOY, **change))
    assert registry.find_algorithm(change.get("name", "toy")) in (
        None,
        registry.get_algorithm("fedavg"),
    )


def test_a_declaration_without_cost_model_cannot_be_made() -> None:
    fields = {f.name: getattr(TOY, f.name) for f in dataclasses.fields(TOY)}
    del fields["ms_per_round"]
    with pytest.raises(TypeError, match="ms_per_round"):
        AlgorithmDecl(**fields)


@pytest.mark.usefixtures("algorithms_restored")
def test_a_registered_algorithm_reaches_spec_schema_estimates_and_colours() -> None:
    from dashboard.compare_page.compare_view import algorithm_color

    base = {"data": {"name": "synthetic"}, "rounds": 10}
    with pytest.raises(SpecError, match="algorithm: Input tag 'toy'"):
        parse_spec({**base, "algorithm": {"name": "toy"}})
    register_algorithm(TOY)
    spec = parse_spec({**base, "algorithm": {"name": "toy"}})
    fedavg = parse_spec({**base, "algorithm": {"name": "fedavg"}})
    mapping = ExperimentSpec.model_json_schema()["properties"]["algorithm"]["discriminator"]
    assert type(spec.algorithm) is ToyParams
    assert set(mapping["mapping"]) == set(registry.algorithm_names())
    assert estimate_cpu_s(spec) == pytest.approx(2 * estimate_cpu_s(fedavg))
    assert algorithm_color("toy") == "#123456"
    with pytest.raises(SpecError, match="share='predictor' is supported by fedavg, "):
        parse_spec({**base, "algorithm": {"name": "toy"}, "share": "predictor"})


def test_labels_and_paper_labels_are_one_declaration() -> None:
    decls = registry.builtin_algorithms()
    assert paper.PAPER_LABELS == {d.name: d.paper_label for d in decls if d.paper_label}
    feddf = registry.get_algorithm("feddf")
    assert (feddf.label, feddf.paper_label) == ("FedDF", "FedDFusion")
    # Table 1's order; the baselines the paper does not have (issue 32) carry no paper label.
    assert [d.name for d in decls if d.paper_label] == list(paper.PAPER_LABELS)
    assert len({d.colour for d in decls}) == len(decls)


def test_no_two_things_are_called_algorithms() -> None:
    import dashboard.spec_form
    import fedgen.algorithms

    for module in (paper, fedgen.algorithms, dashboard.spec_form):
        assert not hasattr(module, "ALGORITHMS"), module.__name__
