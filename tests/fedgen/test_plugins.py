"""Plugins through entry points: examples/plugins/lrdecay installed with pip into this test
environment (a folder on the path, `tests.support.plugin_site`) is listed by `fedgen plugins`,
validated by `fedgen validate` (without torch), known to the REST schema (/spec/defaults,
/spec/schema, the OpenAPI document) and recorded in a run's versions; a plugin that raises
on import is reported by name and the built-ins still run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from tests.support.plugin_site import (
    BROKEN_ERROR,
    ROOT,
    broken_plugin,
    install_example,
    plugins_on_path,
    pythonpath,
)

API = "/api/v1"
TINY: dict[str, Any] = {
    "data": {"name": "synthetic", "synthetic_samples": 600, "synthetic_classes": 4},
    "partition": {"num_users": 4, "alpha": 1.0},
    "users_per_round": 2,
    "rounds": 1,
    "local_steps": 2,
    "batch_size": 16,
    "checkpoint_every": 0,
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/plugins/lrdecay, pip-installed into a folder of this test session."""
    return install_example(tmp_path_factory.mktemp("lrdecay"))


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return broken_plugin(tmp_path_factory.mktemp("broken"))


@pytest.fixture
def installed(site: Path) -> Iterator[None]:
    """This process (the in-process API) sees the installed plugin."""
    with plugins_on_path(site):
        yield


def _fedgen(*args: str, path: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = ["-c", code, *args] if code else ["-m", "fedgen", *args]
    return subprocess.run(
        [sys.executable, *argv],
        cwd=ROOT,
        env={"PYTHONPATH": path, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow  # pip and child processes
def test_cli_lists_and_validates_the_installed_plugin(site: Path, tmp_path: Path) -> None:
    # Prepare
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({**TINY, "algorithm": {"name": "fedavg-decay"}}))
    validate = (
        "import sys\n"
        "from fedgen.cli import main\n"
        "rc = main(['validate', sys.argv[1]])\n"
        "print('torch loaded' if 'torch' in sys.modules else 'no torch')\n"
        "sys.exit(rc)\n"
    )
    # Execute
    listed = _fedgen("plugins", "--json", path=pythonpath(site))
    valid = _fedgen(str(spec), path=pythonpath(site), code=validate)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**TINY, "algorithm": {"name": "fedavg-decay", "server_lr": 0}}))
    invalid = _fedgen("validate", str(bad), path=pythonpath(site))
    # Assert
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == [
        {
            "kind": "algorithm",
            "name": "fedavg-decay",
            "target": "fedgen_lrdecay:DECL",
            "distribution": "fedgen-lrdecay",
            "version": "0.1.0",
            "provides": "fedavg-decay",
            "error": None,
            "ok": True,
        }
    ]
    assert valid.returncode == 0, valid.stderr
    out = yaml.safe_load(valid.stdout.rsplit("# spec_hash", 1)[0])
    assert out["algorithm"] == {"name": "fedavg-decay", "server_lr": 1.0, "server_lr_decay": 0.98}
    assert valid.stdout.strip().endswith("no torch")
    assert invalid.returncode == 2
    assert "algorithm.fedavg-decay.server_lr: Input should be greater than 0" in invalid.stderr


@pytest.mark.slow  # pip and child processes
def test_broken_plugin_is_reported_and_builtins_still_run(
    site: Path, broken: Path, tmp_path: Path
) -> None:
    # Prepare
    spec = tmp_path / "fedavg.yaml"
    spec.write_text(yaml.safe_dump({**TINY, "algorithm": {"name": "fedavg"}}))
    path = pythonpath(broken, site)
    # Execute
    listed = _fedgen("plugins", path=path)
    ran = _fedgen("run", str(spec), "--out", str(tmp_path / "run"), "--json", path=path)
    # Assert
    assert listed.returncode == 1
    lines = {line.split()[1]: line for line in listed.stdout.splitlines()[1:]}
    assert set(lines) == {"broken", "fedavg-decay"}
    assert "fedgen-broken" in lines["broken"]
    assert "0.0.1" in lines["broken"]
    assert f"error: {BROKEN_ERROR}" in lines["broken"]
    assert lines["fedavg-decay"].rstrip().endswith("loaded")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout.splitlines()[-1])["rounds_done"] == 1
    warned = [line for line in ran.stderr.splitlines() if "plugin algorithm broken" in line]
    assert len(warned) == 1
    assert "(fedgen-broken 0.0.1) failed to load" in warned[0]
    assert BROKEN_ERROR in warned[0]


@pytest.mark.usefixtures("installed")
def test_rest_schema_lists_the_plugin(client: TestClient, auth: dict[str, str]) -> None:
    # Execute
    defaults = client.get(f"{API}/spec/defaults", headers=auth).json()
    schema = client.get(f"{API}/spec/schema", headers=auth).json()
    doc = client.get(f"{API}/openapi.json").json()
    bad = client.post(
        f"{API}/spec/validate",
        json={"spec": {"algorithm": {"name": "fedavg-decay", "server_lr_decay": 1.5}}},
        headers=auth,
    )
    # Assert
    listed = {a["name"]: a for a in defaults["algorithms"]}
    assert listed["fedavg-decay"] == {
        "name": "fedavg-decay",
        "label": "FedAvg-decay",
        "paper_label": None,
        "colour": "#C5B0D5",
        "shares": ["all", "predictor"],
        "source": "fedgen-lrdecay",
        "defaults": {"name": "fedavg-decay", "server_lr": 1.0, "server_lr_decay": 0.98},
    }
    assert listed["feddf"]["source"] == "fedgen"
    assert listed["feddf"]["paper_label"] == "FedDFusion"
    assert "fedavg-decay" in schema["properties"]["algorithm"]["discriminator"]["mapping"]
    components = doc["components"]["schemas"]
    mapping = components["ExperimentSpecInput"]["properties"]["algorithm"]["discriminator"]
    assert mapping["mapping"]["fedavg-decay"] == "#/components/schemas/FedAvgDecayParams"
    assert components["FedAvgDecayParams"]["properties"]["server_lr_decay"]["maximum"] == 1
    grid = components["SweepGridFields"]["properties"]
    assert "algorithm.server_lr_decay" in grid
    assert bad.status_code == 422
    assert "algorithm.fedavg-decay.server_lr_decay" in bad.text


@pytest.mark.usefixtures("installed")
def test_run_records_the_plugin_version(client: TestClient, auth: dict[str, str]) -> None:
    # Execute
    made = client.post(
        f"{API}/runs",
        json={"spec": {**TINY, "algorithm": {"name": "fedavg-decay", "server_lr": 0.5}}},
        headers=auth,
    )
    # Assert
    assert made.status_code == 202, made.text
    run = client.get(f"{API}/runs/{made.json()['id']}", headers=auth).json()
    assert run["spec"]["algorithm"] == {
        "name": "fedavg-decay",
        "server_lr": 0.5,
        "server_lr_decay": 0.98,
    }
    assert run["versions"]["plugin:fedavg-decay"] == "fedgen-lrdecay 0.1.0"
