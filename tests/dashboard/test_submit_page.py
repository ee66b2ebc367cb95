"""The Submit page through AppTest on the real API: what is shown is what is sent.

A field out of its schema's range is named with its limit and nothing is validated or sent;
a dataset no live worker can load is marked in the picker and refused (a worker row is
registered in the test database for that, and removed afterwards).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from fedgen.spec import parse_spec
from fedgen.specdict import flatten
from lab.db import session_scope
from lab.repository import workers as workers_repo
from tests.support.apptest import open_page, texts
from tests.support.dashboard_lab import Lab

PAGE = "app_pages/submit.py"


@pytest.fixture
def live_worker(lab: Lab) -> Iterator[str]:
    """A live cpu worker that can load fashion-mnist and synthetic only, removed afterwards."""
    name = "cpu-slot0@submit-test"
    caps = {"datasets": ["fashion-mnist", "synthetic"]}
    with session_scope(lab.app.state.sessionmaker) as s:
        workers_repo.register(s, name, ["cpu"], 1, host="submit-test", capabilities=caps)
    yield name
    with session_scope(lab.app.state.sessionmaker) as s:
        workers_repo.unregister(s, name)


def _tagged(lab: Lab, tag: str) -> list[dict[str, Any]]:
    with lab.client() as c:
        return list(c.get("/runs", params={"tag": tag}).json()["data"])


def _errors(at: AppTest) -> str:
    return "\n".join(str(e.value) for e in at.error)


def test_rounds_zero_is_refused_by_validate_and_submit(
    app_path: str, lab_env: dict[str, Any], lab: Lab
) -> None:
    """rounds = 0: named with its limit under the field, shown as 0 in the YAML, and neither
    Validate nor Submit goes through (no run is created, no 'valid')."""
    # Prepare
    at = open_page(app_path, PAGE)
    at.text_input(key="submit_tags").set_value("refused-rounds")
    at.number_input(key="submit_one_rounds").set_value(0).run()
    # Execute
    at.button(key="submit_validate").click().run()
    validated = _errors(at)
    successes = [s.value for s in at.success]
    at.button(key="submit_go").click().run()
    # Assert
    assert not at.exception
    assert "rounds: must be at least 1" in texts(at)  # under the field
    assert "Not validated" in validated
    assert "rounds: must be at least 1" in validated
    assert successes == []
    assert "Not submitted" in _errors(at)
    assert "rounds: must be at least 1" in _errors(at)
    assert yaml.safe_load(at.code[0].value)["rounds"] == 0  # shown as entered, not the default
    assert _tagged(lab, "refused-rounds") == []


def test_sent_is_exactly_what_is_shown(app_path: str, lab_env: dict[str, Any], lab: Lab) -> None:
    """Fixed to an allowed value, the run stored is the YAML the page showed."""
    # Prepare
    at = open_page(app_path, PAGE)
    at.selectbox(key="submit_one_data.name").set_value("synthetic")
    at.number_input(key="submit_one_partition.num_users").set_value(5)
    at.number_input(key="submit_one_users_per_round").set_value(3)
    at.number_input(key="submit_one_rounds").set_value(0).run()
    at.number_input(key="submit_one_rounds").set_value(7)
    at.number_input(key="submit_one_lr").set_value(0.0123457)
    at.text_input(key="submit_tags").set_value("shown-is-sent").run()
    shown = yaml.safe_load(at.code[0].value)
    # Execute
    at.button(key="submit_go").click().run()
    # Assert
    assert not at.exception
    assert "Queued run" in texts(at)
    (run,) = _tagged(lab, "shown-is-sent")
    with lab.client() as c:
        c.delete(f"/runs/{run['id']}")  # the session's lab keeps its seeded run counts
    # The YAML leaves out the fields at a null default; the API writes them out as null.
    assert {k: v for k, v in flatten(run["spec"]).items() if v is not None} == flatten(shown)
    assert "null" not in at.code[0].value
    assert (shown["rounds"], shown["lr"]) == (7, 0.0123457)


SYNTHETIC_KEYS = {"submit_one_data.synthetic_samples", "submit_one_data.synthetic_classes"}


def _number_keys(at: AppTest) -> set[str]:
    return {str(w.key) for w in at.number_input}


def test_synthetic_fields_only_for_the_synthetic_dataset(
    app_path: str, lab_env: dict[str, Any]
) -> None:
    """fashion-mnist (the default) shows no synthetic samples or classes, nor sends them as
    set; picking synthetic shows both; back to mnist hides them again."""
    # Execute
    at = open_page(app_path, PAGE)
    default = _number_keys(at)
    at.selectbox(key="submit_one_data.name").set_value("synthetic").run()
    synthetic = _number_keys(at)
    at.number_input(key="submit_one_data.synthetic_samples").set_value(500).run()
    sent = yaml.safe_load(at.code[0].value)["data"]
    at.selectbox(key="submit_one_data.name").set_value("mnist").run()
    # Assert
    assert not at.exception
    assert at.selectbox(key="submit_one_data.name").value == "mnist"
    assert default & SYNTHETIC_KEYS == set()
    assert SYNTHETIC_KEYS <= synthetic
    assert sent["synthetic_samples"] == 500
    assert _number_keys(at) & SYNTHETIC_KEYS == set()


def test_sweep_over_algorithms_naming_a_parameter_alike(
    app_path: str, lab_env: dict[str, Any]
) -> None:
    """FedProx x MOON (both have a μ, with other defaults): one widget each, and each grid
    entry holds its own algorithm's μ."""
    # Prepare
    at = open_page(app_path, PAGE)
    at.radio(key="submit_mode").set_value("Sweep").run()
    # Execute
    at.multiselect(key="submit_sw_algorithm.name").set_value(["fedprox", "moon"]).run()
    # Assert
    assert not at.exception
    body = yaml.safe_load(at.code[0].value)
    want = {
        n: parse_spec({"algorithm": {"name": n}}).algorithm.model_dump()["mu"]
        for n in ("fedprox", "moon")
    }
    assert want["fedprox"] != want["moon"]
    assert {a["name"]: a["mu"] for a in body["grid"]["algorithm"]} == want


def test_sweep_yaml_has_no_null_fields(app_path: str, lab_env: dict[str, Any]) -> None:
    """FedAvg x FedGen: each grid entry holds only the parameters that are set (no `null`
    for FedGen's knobs left to the fidelity profile), and the base has no null either."""
    # Prepare
    at = open_page(app_path, PAGE)
    at.radio(key="submit_mode").set_value("Sweep").run()
    # Execute
    at.multiselect(key="submit_sw_algorithm.name").set_value(["fedavg", "fedgen"]).run()
    shown = at.code[0].value
    body = yaml.safe_load(shown)
    # Assert
    assert not at.exception
    assert "null" not in shown
    assert [a["name"] for a in body["grid"]["algorithm"]] == ["fedavg", "fedgen"]
    assert body["grid"]["algorithm"][1]["gen_batch_size"] == 32
    assert "noise_dim" not in body["grid"]["algorithm"][1]


def test_sweep_lists_and_tags_are_checked(app_path: str, lab_env: dict[str, Any]) -> None:
    """Sweep mode: a seed list item below 0 and a tag over its length are named; not sent."""
    # Prepare
    at = open_page(app_path, PAGE)
    at.radio(key="submit_mode").set_value("Sweep").run()
    at.text_input(key="submit_sw_seed").set_value("0, -1")
    at.text_input(key="submit_tags").set_value("ok, " + "x" * 65).run()
    # Execute
    at.button(key="submit_go").click().run()
    # Assert
    assert not at.exception
    refused = _errors(at)
    assert "Not submitted" in refused
    assert "seed: must be at least 0 (got -1)" in refused
    assert "tags: each tag must have at most 64 characters (got 65)" in refused


def test_dataset_no_live_worker_has_is_marked_and_refused(
    app_path: str, lab_env: dict[str, Any], live_worker: str
) -> None:
    """mnist, which the one live worker lacks, reads 'mnist — no live worker has it' in the
    picker and blocks Validate with that sentence; data.download lifts it (any worker may)."""
    # Prepare
    at = open_page(app_path, PAGE)
    options = list(at.selectbox(key="submit_one_data.name").options)
    # Execute
    at.selectbox(key="submit_one_data.name").set_value("mnist")
    at.button(key="submit_validate").click().run()
    refused, page = _errors(at), texts(at)
    at.checkbox(key="submit_one_data.download").check().run()
    at.button(key="submit_validate").click().run()
    # Assert
    assert not at.exception
    assert "mnist — no live worker has it" in options
    assert "fashion-mnist" in options
    assert "Live workers (cpu queue) can load: fashion-mnist, synthetic." in page
    assert "Not validated" in refused
    assert "data.name: mnist — no live worker has it" in refused
    assert "mnist" in at.selectbox(key="submit_one_data.name").options  # no longer marked
    assert [s.value for s in at.success] == ["The spec is valid, exactly as shown above."]


def test_no_live_worker_says_the_run_would_wait(app_path: str, lab_env: dict[str, Any]) -> None:
    """With no live worker nothing is refused for its dataset, and the page says the run waits."""
    # Execute
    at = open_page(app_path, PAGE)
    # Assert
    assert not at.exception
    assert "mnist" in at.selectbox(key="submit_one_data.name").options
    assert any("No worker is live" in str(w.value) for w in at.warning)


def test_sweep_validate_checks_every_combination(app_path: str, lab_env: dict[str, Any]) -> None:
    """A sweep whose second users_per_round exceeds the users is not 'valid': the combination
    is named as POST /sweeps would name it."""
    # Prepare
    at = open_page(app_path, PAGE)
    at.radio(key="submit_mode").set_value("Sweep").run()
    at.text_input(key="submit_sw_users_per_round").set_value("3, 30").run()
    # Execute
    at.button(key="submit_validate").click().run()
    # Assert
    assert not at.exception
    assert [s.value for s in at.success] == []
    assert "grid.users_per_round[1]: users_per_round=30 exceeds partition.num_users=20" in _errors(
        at
    )


def test_the_queued_message_stays_until_the_form_changes(
    app_path: str, lab_env: dict[str, Any], lab: Lab
) -> None:
    """After Submit, a rerun of the page (any widget, a late box) still says what was queued,
    with its Live link; changing a field clears it; only one run was made."""
    # Prepare
    at = open_page(app_path, PAGE)
    at.selectbox(key="submit_one_data.name").set_value("synthetic")
    at.number_input(key="submit_one_partition.num_users").set_value(5)
    at.number_input(key="submit_one_users_per_round").set_value(3)
    at.text_input(key="submit_tags").set_value("stays-said").run()
    # Execute
    at.button(key="submit_go").click().run()
    said_once = [s.value for s in at.success]
    at.run()  # a rerun that no click started
    said_again = [s.value for s in at.success]
    at.number_input(key="submit_one_rounds").set_value(9).run()
    said_after_change = [s.value for s in at.success]
    # Assert
    assert not at.exception
    (run,) = _tagged(lab, "stays-said")
    with lab.client() as c:
        c.delete(f"/runs/{run['id']}")  # the session's lab keeps its seeded run counts
    assert said_once == [f"Queued run {run['id']}."]
    assert said_again == said_once
    assert said_after_change == []


def test_every_widget_is_drawn_with_the_value_it_holds(
    app_path: str, lab_env: dict[str, Any]
) -> None:
    """A widget's default in what the page sends the browser is the value it holds, not None:
    a browser that draws a widget afresh (its copy of the state dropped after a rerun cut
    short) shows that default and sends it back. With None, CI's newcomer walk sent a sweep
    whose untouched Advanced fields were "is required" (checkpoint_every, model.name, ...)."""
    # Prepare
    at = open_page(app_path, PAGE)
    at.number_input(key="submit_one_checkpoint_every").set_value(7)
    at.selectbox(key="submit_one_model.name").set_value("mcmahan-cnn")
    at.text_input(key="submit_one_device").set_value("cpu")
    at.number_input(key="submit_one_rounds").set_value(9).run()
    at.radio(key="submit_mode").set_value("Sweep").run()
    at.text_input(key="submit_sw_partition.alpha").set_value("0.1, 1").run()
    # Execute
    at.run()  # a rerun no widget started: every widget is drawn holding a value
    # Assert
    assert not at.exception
    advanced = at.number_input(key="submit_one_checkpoint_every")
    assert (advanced.value, advanced.proto.default) == (7, 7)
    model = at.selectbox(key="submit_one_model.name")
    assert model.value == "mcmahan-cnn"
    assert model.options[model.proto.default] == "mcmahan-cnn"
    assert at.text_input(key="submit_one_device").proto.default == "cpu"
    rounds = at.text_input(key="submit_sw_rounds")  # carried over from the single run's 9
    assert (rounds.value, rounds.proto.default) == ("9", "9")
    alpha = at.text_input(key="submit_sw_partition.alpha")
    assert (alpha.value, alpha.proto.default) == ("0.1, 1", "0.1, 1")
    algorithms = at.multiselect(key="submit_sw_algorithm.name")
    assert [algorithms.options[i] for i in algorithms.proto.default] == algorithms.value
    sent = yaml.safe_load(at.code[0].value)
    assert sent["base"]["checkpoint_every"] == 7
    assert sent["base"]["model"]["name"] == "mcmahan-cnn"
    assert sent["grid"]["partition.alpha"] == [0.1, 1.0]
    at.radio(key="submit_mode").set_value("Single run").run()
    at.run()
    back = at.number_input(key="submit_one_rounds")  # carried back from the sweep's "9"
    assert (back.value, back.proto.default) == (9, 9)
