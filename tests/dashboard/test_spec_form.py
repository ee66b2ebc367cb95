"""The Submit form's pure model: fields from the spec's schema, spec and sweep builders, value lists,
the checks that refuse a value outside the schema's limits, the datasets live workers offer, help."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from dashboard.spec_form import (
    HELP,
    FormField,
    fields_from_schema,
    form_start,
    parse_list,
    split_errors,
    text_field,
    text_fields,
)
from dashboard.submit_page.form_checks import check, read_list, read_tags, refusals
from dashboard.submit_page.spec_build import (
    applies,
    build_spec,
    build_sweep,
    sweep_size,
    without_default_nulls,
)
from dashboard.worker_offer import offer
from fedgen.knobs import KNOBS
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.specdict import flatten, get_dotted
from fedgen.sweep import SweepSpec, expand
from vocab.schemas.workers import WorkerPublic, WorkersPublic

# What the form starts from: GET /spec/defaults (the schema's defaults) with the new-run defaults.
SCHEMA_DEFAULTS: dict[str, Any] = parse_spec({}).model_dump(mode="json")
DEFAULTS = form_start(SCHEMA_DEFAULTS)
FIELDS = fields_from_schema(ExperimentSpec.model_json_schema(), DEFAULTS)
# Parameters that algorithms name alike with different schemas (FedProx's and MOON's mu) are
# one field each: look those up with `param`.
BY_PATH = {f.path: f for f in FIELDS}


def param(name: str, algorithm: str) -> FormField:
    """The form's field for `algorithm`'s parameter `name`."""
    (found,) = [f for f in FIELDS if f.path == f"algorithm.{name}" and algorithm in f.only]
    return found


def test_fields_cover_every_spec_field() -> None:
    """Every dotted field of the defaults (and each algorithm's parameters) has an input."""
    paths = set(BY_PATH)
    missing = {f for f in flatten(DEFAULTS) if f not in paths} - {"tags", "note"}
    assert missing == set()
    for name in ("fedgen", "fedprox", "feddf", "feddistill"):
        params = parse_spec({"algorithm": {"name": name}}).model_dump(mode="json")["algorithm"]
        assert {f"algorithm.{k}" for k in params} <= paths, name


def test_fields_take_choices_and_bounds_from_the_schema() -> None:
    """Literals become choices; ge/le/gt become bounds; None-able knobs are nullable."""
    assert BY_PATH["fidelity.profile"].choices == ("paper", "official")
    assert BY_PATH["fidelity.profile"].default == "official"
    assert (BY_PATH["rounds"].minimum, BY_PATH["rounds"].maximum) == (1, 10_000)
    assert BY_PATH["lr"].exclusive_minimum == 0.0
    assert BY_PATH["fidelity.eval_timing"].nullable
    assert BY_PATH["algorithm.gen_batch_size"].only == ("fedgen",)
    assert BY_PATH["algorithm.reg_alpha"].only == ("feddistill", "feddistill-plus")
    assert "heldout" in BY_PATH["algorithm.proxy"].choices
    mu = param("mu", "fedprox")
    assert applies(mu, {"algorithm.name": ["fedprox"]})
    assert not applies(mu, {"algorithm.name": ["fedgen"]})
    assert not applies(mu, {"algorithm.name": ["moon"]})  # MOON's μ is its own field
    assert (mu.default, param("mu", "moon").default) == (
        parse_spec({"algorithm": {"name": "fedprox"}}).algorithm.model_dump()["mu"],
        parse_spec({"algorithm": {"name": "moon"}}).algorithm.model_dump()["mu"],
    )


def test_a_parameter_named_alike_keeps_each_algorithms_value() -> None:
    """A sweep over FedProx and MOON: each μ has its own widget and value, and each algorithm
    entry gets its own (not the other algorithm's default)."""
    fedprox, moon = param("mu", "fedprox"), param("mu", "moon")
    assert fedprox.form_key != moon.form_key
    assert fedprox.default != moon.default
    chosen = {"algorithm.name": ["fedprox", "moon"], "data.name": [DEFAULTS["data"]["name"]]}
    lists = {f.form_key: [f.default] for f in FIELDS if applies(f, chosen)}
    lists["algorithm.name"] = ["fedprox", "moon"]
    lists[moon.form_key] = [0.5, 2.0]
    # Execute
    _, grid = build_sweep(lists, FIELDS, DEFAULTS)
    # Assert
    mus = [(a["name"], a["mu"]) for a in grid["algorithm"]]
    assert mus == [("fedprox", fedprox.default), ("moon", 0.5), ("moon", 2.0)]


def test_execution_is_picked_in_the_form_and_starts_at_the_new_run_default() -> None:
    """`execution` offers the schema's three choices (under Advanced) and starts at
    what POST /runs gives a new run that names none, not at the schema's default (which
    stays `sequential` so that old specs keep their hashes)."""
    execution = BY_PATH["execution"]
    assert set(execution.choices) == {"sequential", "batched", "auto"}
    assert execution.section == "advanced"
    assert "execution" not in SCHEMA_DEFAULTS  # dumped without it at the schema's default
    assert execution.default == "auto"
    assert build_spec({}, FIELDS, DEFAULTS)["execution"] == "auto"
    chosen = build_spec({"execution": "batched"}, FIELDS, DEFAULTS)
    assert parse_spec(chosen).execution == "batched"


def _nulls(d: Any) -> list[str]:
    """The dotted fields of `d` (nested, lists of mappings too) whose value is None."""
    if isinstance(d, list):
        return [f"[{i}].{n}" for i, x in enumerate(d) for n in _nulls(x)]
    return [k for k, v in flatten(d).items() if v is None] if isinstance(d, dict) else []


def test_untouched_values_build_the_defaults() -> None:
    """Every field at its default (FedAvg) builds GET /spec/defaults' spec less its nulls,
    which validates to exactly that spec (a missing field gets its null default)."""
    chosen = {"algorithm.name": ["fedavg"], "data.name": [DEFAULTS["data"]["name"]]}
    values = {f.form_key: f.default for f in FIELDS if applies(f, chosen)}
    spec = {**build_spec(values, FIELDS, DEFAULTS), "tags": [], "note": ""}
    assert _nulls(spec) == []
    assert {k: v for k, v in flatten(DEFAULTS).items() if v is not None} == flatten(spec)
    assert parse_spec(spec).model_dump(mode="json") == DEFAULTS


@pytest.mark.parametrize("algorithm", sorted(BY_PATH["algorithm.name"].choices))
def test_left_out_nulls_give_the_same_spec(algorithm: str) -> None:
    """Every algorithm, its parameters at their defaults: no null is written, and the spec
    the API validates (hash included) is the one with every null written out."""
    chosen = {"algorithm.name": [algorithm], "data.name": [DEFAULTS["data"]["name"]]}
    values = {f.form_key: f.default for f in FIELDS if applies(f, chosen)}
    spec = build_spec({**values, "algorithm.name": algorithm}, FIELDS, DEFAULTS)
    full = parse_spec({**DEFAULTS, "algorithm": {"name": algorithm}})
    assert _nulls(spec) == []
    assert parse_spec(spec).spec_hash() == full.spec_hash()
    assert parse_spec(spec).model_dump(mode="json") == full.model_dump(mode="json")


def test_only_nulls_the_defaults_have_are_left_out() -> None:
    """A null over a set default, or one the defaults lack, is kept (it is what was chosen)."""
    defaults = {"a": None, "b": 3, "s": {"c": None, "d": 1}}
    spec = {"a": None, "b": None, "s": {"c": None, "d": None}, "e": None, "f": 0}
    assert without_default_nulls(spec, defaults) == {"b": None, "s": {"d": None}, "e": None, "f": 0}
    assert without_default_nulls({"s": None}, {"s": {"c": None}}) == {"s": None}


def test_sweep_grid_entries_and_base_have_no_null_fields() -> None:
    """FedAvg x FedGen with every field untouched: no `null` in the base or a grid entry
    (FedGen's ~28 knobs left to the profile), and the same runs as with the nulls written."""
    chosen = {"algorithm.name": ["fedavg", "fedgen"], "data.name": [DEFAULTS["data"]["name"]]}
    lists = {f.form_key: [f.default] for f in FIELDS if applies(f, chosen)}
    lists["algorithm.name"] = ["fedavg", "fedgen"]
    # Execute
    base, grid = build_sweep(lists, FIELDS, DEFAULTS)
    # Assert
    assert _nulls(base) == []
    assert _nulls(grid["algorithm"]) == []
    assert grid["algorithm"][1]["gen_batch_size"] == 32
    full = [parse_spec({**DEFAULTS, "algorithm": {"name": n}}) for n in ("fedavg", "fedgen")]
    runs = expand(SweepSpec(name="s", base=base, grid=grid), strict=True)
    assert [r.spec_hash() for r in runs] == [f.spec_hash() for f in full]


def test_build_spec_keeps_only_the_algorithms_params() -> None:
    """FedGen's B_G goes into algorithm; FedProx's mu does not; the rest keeps its defaults."""
    # Execute
    spec = build_spec(
        {
            "algorithm.name": "fedgen",
            "algorithm.gen_batch_size": 16,
            "algorithm.mu": 0.1,
            "partition.alpha": 0.5,
            "data.name": "mnist",
            "seed": 3,
        },
        FIELDS,
        DEFAULTS,
    )
    # Assert
    assert spec["algorithm"] == {"name": "fedgen", "gen_batch_size": 16}
    set_only = without_default_nulls(DEFAULTS, DEFAULTS)  # null defaults are left out
    assert spec["partition"] == {**set_only["partition"], "alpha": 0.5}
    assert spec["data"]["name"] == "mnist"
    assert spec["rounds"] == DEFAULTS["rounds"]
    assert parse_spec(spec).algorithm.name == "fedgen"


def test_build_sweep_grid() -> None:
    """Lists become grid entries; algorithms expand with their own parameter lists."""
    # Execute
    base, grid = build_sweep(
        {
            "algorithm.name": ["fedavg", "fedgen"],
            "algorithm.gen_batch_size": [16, 32],
            "seed": [0, 1, 2],
            "rounds": [5],
        },
        FIELDS,
        DEFAULTS,
    )
    # Assert
    assert base["rounds"] == 5
    assert grid["seed"] == [0, 1, 2]
    assert grid["algorithm"] == [
        {"name": "fedavg"},
        {"name": "fedgen", "gen_batch_size": 16},
        {"name": "fedgen", "gen_batch_size": 32},
    ]
    assert sweep_size(grid) == 9


def test_single_algorithm_sweep_goes_to_base() -> None:
    """One algorithm with one parameter value is part of the base spec."""
    base, grid = build_sweep(
        {"algorithm.name": ["fedgen"], "algorithm.gen_batch_size": [32], "seed": [0]},
        FIELDS,
        DEFAULTS,
    )
    assert base["algorithm"] == {"name": "fedgen", "gen_batch_size": 32}
    assert grid == {}


def test_parse_list() -> None:
    """Comma or semicolon lists of numbers; bad items are named."""
    assert parse_list("0.1, 1;10", "float") == [0.1, 1.0, 10.0]
    assert parse_list("1, 2.0", "int") == [1, 2]
    with pytest.raises(ValueError, match="'2.5' is not a valid integer"):
        parse_list("1, 2.5", "int")
    with pytest.raises(ValueError, match="at least one"):
        parse_list(" , ", "int")


def test_split_errors() -> None:
    """Errors of form fields vs the rest."""
    assert split_errors({"seed": "x", "(root)": "y"}, FIELDS) == ({"seed": "x"}, {"(root)": "y"})


# -- what is shown is what is sent: the form's own checks, from the schema's limits ---------


def test_check_names_the_limit() -> None:
    """Out of range -> the limit in words; in range, or None where the schema allows it -> None."""
    assert check(BY_PATH["rounds"], 0) == "must be at least 1"
    assert check(BY_PATH["rounds"], 10_001) == "must be at most 10000"
    assert check(BY_PATH["rounds"], 2.5) == "must be a whole number"
    assert check(BY_PATH["lr"], 0.0) == "must be greater than 0"
    assert check(BY_PATH["partition.alpha"], float("nan")) == "must be a finite number"
    assert check(BY_PATH["rounds"], None) == "is required"
    assert (
        check(BY_PATH["device"], "gpu")
        == r"must match the pattern ^(cpu|cuda(:\d{1,2})?)$ (got 'gpu')"
    )
    assert check(BY_PATH["rounds"], 1) is None
    assert check(BY_PATH["lr_decay"], None) is None  # a knob left to the profile
    assert check(BY_PATH["device"], "cuda:1") is None


def _numeric_bounds() -> list[tuple[str, float, float]]:
    """(field, a value just outside, a value just inside) for each bound of each numeric field."""
    out: list[tuple[str, float, float]] = []
    for f in FIELDS:
        if f.kind not in ("int", "float"):
            continue
        eps = 1 if f.kind == "int" else 1e-6
        if f.minimum is not None:
            out.append((f.form_key, f.minimum - eps, f.minimum))
        if f.exclusive_minimum is not None:
            out.append((f.form_key, f.exclusive_minimum, f.exclusive_minimum + eps))
        if f.maximum is not None:
            out.append((f.form_key, f.maximum + eps, f.maximum))
    return out


@pytest.mark.parametrize(("key", "refused", "allowed"), _numeric_bounds())
def test_check_refuses_exactly_what_the_spec_refuses(
    key: str, refused: float, allowed: float
) -> None:
    """Every numeric bound: the form refuses the value just outside, as parse_spec does at that
    field, and accepts the bound (the limits are the schema's, not a second copy); the value
    built into the spec is the one entered, never a default."""
    # Prepare
    f = next(f for f in FIELDS if f.form_key == key)
    path = f.path
    algorithm = f.only[0] if f.only and f.only_of == "algorithm.name" else "fedavg"
    # a data.folder.* field: with the folder dataset and the folder's required fields
    folder = {"data.name": "folder", "data.folder.path": "imgs", "data.folder.classes": 3}
    extra = folder if f.only_of == "data.name" else {}
    # Execute
    spec = build_spec({"algorithm.name": algorithm, **extra, key: refused}, FIELDS, DEFAULTS)
    # Assert
    assert get_dotted(spec, path) == refused
    with pytest.raises(SpecError) as exc:
        parse_spec(spec)
    # pydantic names a discriminated union's member: algorithm.fedgen.gen_batch_size
    named = {loc.replace(f"algorithm.{algorithm}.", "algorithm.") for loc, _ in exc.value.errors}
    assert path in named
    assert check(f, refused) is not None
    assert check(f, allowed) is None


def test_read_list_keeps_what_was_typed() -> None:
    """A sweep list: each item checked with the value named; a bad item stays as typed."""
    assert read_list("0, 1, 2", BY_PATH["seed"]) == ([0, 1, 2], None)
    assert read_list("0, -1", BY_PATH["seed"]) == ([0, -1], "must be at least 0 (got -1)")
    assert read_list("1, x", BY_PATH["rounds"]) == ([1, "x"], "'x' is not a valid integer")
    assert read_list(" , ", BY_PATH["rounds"]) == ([], "needs at least one value")


def test_tags_note_and_sweep_name_take_the_schemas_limits() -> None:
    """Tags: at most maxItems, each at most maxLength; note and sweep name from their schemas."""
    schema = ExperimentSpec.model_json_schema()
    text = text_fields(schema)
    assert read_tags("a, b", text["tags"], schema) == (["a", "b"], None)
    assert read_tags("x" * 65, text["tags"], schema) == (
        ["x" * 65],
        "each tag must have at most 64 characters (got 65)",
    )
    assert (
        read_tags(",".join(map(str, range(33))), text["tags"], schema)[1]
        == "at most 32 tags (got 33)"
    )
    assert check(text["note"], "n" * 10_001) == "must have at most 10000 characters (got 10001)"
    name = text_field("name", SweepSpec.model_json_schema()["properties"]["name"])
    assert check(name, "") == "must not be empty"
    assert refusals({"rounds": "must be at least 1"}) == "- rounds: must be at least 1"


# -- datasets the live workers can load ------------------------------------------------------


NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _workers(*entries: tuple[list[str], list[str] | None]) -> WorkersPublic:
    live = [
        WorkerPublic(
            name=f"w{i}",
            host=None,
            queues=queues,
            slots=1,
            threads=None,
            devices=[],
            code_version=None,
            datasets=datasets,
            started_at=NOW,
            heartbeat_at=NOW,
            running=[],
        )
        for i, (queues, datasets) in enumerate(entries)
    ]
    return WorkersPublic(workers=live, slots=len(live), busy=0)


def test_offer_marks_datasets_no_live_worker_has() -> None:
    """A dataset no live worker of the run's queue has is marked with the reason."""
    # Execute
    cpu = offer(_workers((["cpu"], ["fashion-mnist"]), (["gpu"], ["mnist"])), "cpu")
    # Assert
    assert cpu.reason("mnist") == "mnist — no live worker has it"
    assert cpu.label("mnist") == "mnist — no live worker has it"
    assert cpu.reason("fashion-mnist") is None
    assert cpu.label("fashion-mnist") == "fashion-mnist"
    assert cpu.notice() is None
    assert offer(_workers((["lab-gpu"], ["mnist"])), "cuda:0").reason("mnist") is None  # prefix
    assert offer(_workers((["cpu"], None)), "cpu").reason("celeba") is None  # says nothing: all


def test_offer_with_own_data_or_no_worker_refuses_nothing() -> None:
    """data.root/download: any worker of the queue; no live worker: nothing known, the run waits."""
    assert offer(_workers((["cpu"], ["synthetic"])), "cpu", any_worker=True).reason("mnist") is None
    none = offer(WorkersPublic(workers=[], slots=0, busy=0), "cpu")
    assert none.reason("mnist") is None
    assert "No worker is live" in str(none.notice())
    gpu = offer(_workers((["cpu"], ["mnist"])), "cuda")
    assert gpu.reason("celeba") is None
    assert "No live worker serves the gpu queue" in str(gpu.notice())


# -- help --------------------------------------------------------------------------------------


def test_every_field_has_help_and_paper_fields_say_their_meaning() -> None:
    """Every input has help; the paper's symbols are named; limits are stated."""
    assert [f.path for f in FIELDS if not f.help] == []
    assert "`paper`" in BY_PATH["fidelity.profile"].help
    assert "`official`" in BY_PATH["fidelity.profile"].help
    assert "Table 2" in BY_PATH["algorithm.preset"].help
    assert "Dirichlet" in BY_PATH["partition.alpha"].help
    assert BY_PATH["local_steps"].help.startswith("T:")
    assert BY_PATH["algorithm.gen_batch_size"].help.startswith("B_G:")
    assert "Allowed: at least 1, at most 10000." in BY_PATH["rounds"].help
    assert "more than 0" in BY_PATH["lr"].help


def test_knob_help_comes_from_the_knob() -> None:
    """A fidelity knob's help gives the paper's and the official code's values from fedgen.knobs."""
    for knob in KNOBS:
        text = BY_PATH[knob.path].help
        assert knob.paper_text in text, knob.name
        assert knob.official_text in text, knob.name


def test_help_is_written_once() -> None:
    """HELP fills only fields whose spec Field has no description: a description added to
    fedgen/spec.py wins, and this fails until the copy here is removed."""
    assert set(HELP) <= set(BY_PATH)
    # A path several algorithms share (temperature: FedDF's without a description, MOON's
    # with one) keeps its HELP entry while one of its fields has no description.
    unused = [
        p for p in HELP if not any(f.path == p and f.help.startswith(HELP[p]) for f in FIELDS)
    ]
    assert unused == []
    described = [f.path for f in FIELDS if f.path in HELP and not f.help.startswith(HELP[f.path])]
    assert described == ["algorithm.temperature"]  # MOON's τ: its own description wins


def test_model_help_names_every_registered_model_from_the_registry() -> None:
    """The help of `model.name` is the schema's, written from the model registry: every
    built-in model and a plugin's model registered later, each with its declared inputs."""
    import dataclasses

    from fedgen.models.registry import get_model, model_names, register_model, unregister_model

    help_text = BY_PATH["model.name"].help
    for name in ("official-cnn", "mcmahan-cnn", "resnet18", "cifar-cnn", "mlr", *model_names()):
        assert f"`{name}`" in help_text, name
        assert get_model(name).inputs in help_text, name
    plugin = dataclasses.replace(
        get_model("mlr"), name="plugin-net", description="a plugin's net", source="a-plugin"
    )
    register_model(plugin)
    try:
        fields = fields_from_schema(ExperimentSpec.model_json_schema(), DEFAULTS)
        (field,) = [f for f in fields if f.path == "model.name"]
        assert "`plugin-net`: a plugin's net" in field.help
        assert "plugin-net" in field.choices
    finally:
        unregister_model("plugin-net")
