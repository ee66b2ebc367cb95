"""One set of defaults: the untouched Submit form, GET /spec/defaults and `fedgen validate` agree.

AppTest drives the real Submit page against the real API (tests/dashboard/conftest.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from fedgen.specdict import flatten
from tests.support.apptest import open_page
from tests.support.dashboard_lab import Lab

ROOT = Path(__file__).resolve().parents[2]


def _cli_defaults(tmp_path: Path) -> dict[str, Any]:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    out = subprocess.run(
        [sys.executable, "-m", "fedgen", "validate", str(empty)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(yaml.safe_load(out))


def test_untouched_form_submits_the_rest_and_cli_defaults(
    app_path: str, lab_env: dict[str, Any], lab: Lab, tmp_path: Path
) -> None:
    """Submit the form untouched: the stored spec is what an empty POST /runs stores (the
    new-run default `execution: auto` written in), and otherwise GET /spec/defaults' and the
    CLI's, field by field."""
    # Prepare
    at = open_page(app_path, "app_pages/submit.py")
    shown = yaml.safe_load(at.code[0].value)
    # Execute
    at.button(key="submit_go").click().run()
    # Assert
    assert not at.exception
    run_id = at.session_state["live_run_id"]
    with lab.client() as c:
        stored = c.get(f"/runs/{run_id}").json()["spec"]
        rest = c.get("/spec/defaults").json()["spec"]
        empty = c.post("/runs", json={"spec": {}}).raise_for_status().json()
        c.delete(f"/runs/{run_id}")  # the session's lab keeps its seeded run counts
        c.delete(f"/runs/{empty['id']}")
    cli = _cli_defaults(tmp_path)
    assert stored == empty["spec"]
    assert stored["execution"] == "auto"  # the lab's default for a new run, not the schema's
    form = flatten({k: v for k, v in stored.items() if k != "execution"})
    api, cmd = flatten(rest), flatten(cli)
    # Both at the schema's default, sequential, which a spec dumps without.
    assert "execution" not in api
    assert "execution" not in cmd
    assert sorted(form) == sorted(api) == sorted(cmd)
    for field in api:
        assert form[field] == api[field] == cmd[field], field
    # The YAML shown before submitting is what was sent: the stored spec less the fields
    # whose default is null (the API fills those in, as the stored spec above shows).
    assert flatten(shown) == {k: v for k, v in flatten(stored).items() if v is not None}


def test_form_shows_the_chosen_algorithms_params_and_every_field(
    app_path: str, lab_env: dict[str, Any]
) -> None:
    """FedGen's B_G only when FedGen is chosen; advanced fields (checkpointing, knobs, share, device) reachable."""
    # Prepare
    at = open_page(app_path, "app_pages/submit.py")
    keys = (
        {w.key for w in at.number_input}
        | {w.key for w in at.selectbox}
        | {w.key for w in at.text_input}
    )
    # Execute
    at.selectbox(key="submit_one_algorithm.name").set_value("fedgen").run()
    fedgen_keys = {w.key for w in at.number_input} | {w.key for w in at.selectbox}
    at.number_input(key="submit_one_algorithm.gen_batch_size").set_value(64)
    at.selectbox(key="submit_one_algorithm.diversity_loss").set_value("none").run()
    # Assert
    assert not at.exception
    assert "submit_one_algorithm.gen_batch_size" not in keys
    assert "submit_one_algorithm.gen_batch_size" in fedgen_keys
    assert "submit_one_algorithm.mu" not in fedgen_keys
    for field in (
        "checkpoint_every",
        "share",
        "device",
        "fidelity.eval_timing",
        "fidelity.aggregation",
        "partition.data_seed",
        "model.name",
        "eval_batch_size",
    ):
        assert f"submit_one_{field}" in keys, field
    sent = yaml.safe_load(at.code[0].value)
    assert sent["algorithm"]["name"] == "fedgen"
    assert sent["algorithm"]["gen_batch_size"] == 64
    assert sent["algorithm"]["diversity_loss"] == "none"
    assert "noise" not in sent["algorithm"]  # left to the profile: its null default, unwritten


def test_form_bounds_come_from_the_schema(app_path: str, lab_env: dict[str, Any]) -> None:
    """Rounds' limits are the spec's Field bounds; choices are the spec's Literals."""
    # Execute
    at = open_page(app_path, "app_pages/submit.py")
    # Assert
    rounds = at.number_input(key="submit_one_rounds")
    # No min/max in the widget (it would keep an old value while showing the typed one): the
    # form checks the schema's bounds itself and names them in the help and in its refusals.
    assert "Allowed: at least 1, at most 10000." in rounds.help
    assert list(at.selectbox(key="submit_one_fidelity.profile").options) == ["paper", "official"]
    assert at.selectbox(key="submit_one_fidelity.profile").value == "official"
    assert at.selectbox(key="submit_one_data.name").value == "fashion-mnist"


def test_compare_page_shows_the_difference_of_two_groups(
    app_path: str, lab_env: dict[str, Any], lab: Lab
) -> None:
    """The Compare page's difference block shows the server's Welch figures for two groups,
    the better group first by default (FedGen − FedAvg, positive), the final named with its
    round (official protocol, 6 rounds: final @5)."""
    # Prepare
    ids = lab_env["run_ids"]
    with lab.client() as c:
        runs = {i: c.get(f"/runs/{i}").json() for i in ids}
        by_alg: dict[str, list[str]] = {}
        for i, r in runs.items():
            by_alg.setdefault(r["spec"]["algorithm"]["name"], []).append(i)
        want = c.get(
            "/difference",
            params={
                "a": ",".join(by_alg["fedavg"]),
                "b": ",".join(by_alg["fedgen"]),
                "statistic": "final",
            },
        ).json()
    # Execute
    at = open_page(app_path, "app_pages/compare.py", {"compare_ids": ids})
    # Assert
    assert not at.exception
    shown = "\n".join(m.value for m in at.markdown)
    assert want["diff"] < 0  # FedAvg − FedGen as named: the page turns it round
    assert f"FedGen − FedAvg: {-100 * want['diff']:+.1f} points" in shown
    assert "n = 2 vs 2" in shown
    assert "(final @5)" in shown
