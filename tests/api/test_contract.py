"""The API keeps its OpenAPI contract: Schemathesis, every check, against a live server.

The same run as `make contract` (scripts/contract.py: `fedgen-lab api` on a scratch
Postgres schema, a token from `fedgen-lab users create`), with fewer cases; and that run's
clean-up (schema, folder, processes) on a timeout, on Ctrl-C and on SIGTERM.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from sqlalchemy import text

from lab.db import make_engine
from scripts import contract
from tests.support.needs import needs


def _postgres_up() -> bool:
    eng = make_engine(contract.PG_BASE, pool_size=1)
    try:
        with eng.connect() as c:
            c.execute(text("SELECT 1"))
        return True
    except Exception:
        return False
    finally:
        eng.dispose()


@pytest.mark.postgres
@pytest.mark.slow
def test_schemathesis_finds_no_failure(capsys: pytest.CaptureFixture[str]) -> None:
    needs(_postgres_up(), f"PostgreSQL at {contract.PG_BASE}")
    rc = contract.main(
        [
            "--max-examples",
            "4",
            "--min-cases",
            "100",
            "--timeout-s",
            "900",
            "--",
            "--phases",
            "examples,fuzzing",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0, out[-6000:]


def _schema_exists(name: str) -> bool:
    eng = make_engine(contract.PG_BASE, pool_size=1)
    try:
        with eng.connect() as c:
            return bool(
                c.scalar(
                    text("SELECT count(*) FROM information_schema.schemata WHERE schema_name = :n"),
                    {"n": name},
                )
            )
    finally:
        eng.dispose()


def _scratch(out: str) -> tuple[str, Path]:
    m = re.search(r"contract: scratch schema (\S+), FEDGEN_HOME (\S+)", out)
    assert m, out[-3000:]
    return m.group(1), Path(m.group(2))


def _api_pid(out: str) -> int:
    m = re.search(r"contract: API at \S+ \(pid (\d+)\)", out)
    assert m, out[-3000:]
    return int(m.group(1))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_timeout_stops_schemathesis_and_cleans_up(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Past --timeout-s: exit 124, what Schemathesis printed so far shown, schema and folder gone.

    A stand-in prints Schemathesis' banner and hangs: the real one, under load, may take longer
    than the timeout just to start, and a run that never printed shows no streaming."""
    needs(_postgres_up(), f"PostgreSQL at {contract.PG_BASE}")
    # Prepare
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    stand_in = tmp_path / "schemathesis"
    stand_in.write_text('#!/bin/sh\necho "Schemathesis v0 (stand-in)"\nexec sleep 600\n')
    stand_in.chmod(0o755)
    which = shutil.which
    monkeypatch.setattr(
        shutil,
        "which",
        lambda name, **kw: str(stand_in) if name == "schemathesis" else which(name, **kw),
    )
    # Execute
    rc = contract.main(["--max-examples", "30", "--timeout-s", "5"])
    out = capsys.readouterr().out
    # Assert
    schema, home = _scratch(out)
    assert rc == contract.TIMED_OUT, out[-3000:]
    assert "Schemathesis v0 (stand-in)" in out  # streamed before the timeout, not in a buffer
    assert "did not finish within 5 s" in out
    assert not _schema_exists(schema)
    assert not home.exists()
    assert not _alive(_api_pid(out))


def _sigint_as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_run_and_cleans_up(sig: signal.Signals, code: int) -> None:
    """SIGTERM or Ctrl-C while Schemathesis runs: the API and Schemathesis stop, the schema is
    dropped and the folder removed."""
    needs(_postgres_up(), f"PostgreSQL at {contract.PG_BASE}")
    # Prepare
    proc = subprocess.Popen(
        [sys.executable, "-m", "scripts.contract", "--max-examples", "30"],
        cwd=contract.ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # As from a terminal: an xdist worker (or a background shell) starts children with
        # SIGINT ignored, and Python keeps an inherited SIG_IGN, so Ctrl-C would not arrive.
        preexec_fn=_sigint_as_from_a_terminal,
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # until Schemathesis has started (its banner)
        seen.append(line)
        if line.startswith("Schemathesis v"):
            break
    # Execute
    proc.send_signal(sig)
    rest, _ = proc.communicate()
    out = "".join(seen) + rest
    # Assert
    schema, home = _scratch(out)
    assert proc.returncode == code, out[-3000:]
    assert not _schema_exists(schema)
    assert not home.exists()
    assert not _alive(_api_pid(out))


API = "/api/v1"


def test_allow_lists_every_method_of_the_path(client, auth) -> None:
    r = client.options(f"{API}/runs/00000000-0000-0000-0000-000000000000")
    assert r.status_code == 204
    assert set(r.headers["allow"].split(", ")) == {"GET", "PATCH", "DELETE", "OPTIONS"}
    r = client.put(f"{API}/runs", headers=auth)
    assert r.status_code == 405
    assert set(r.headers["allow"].split(", ")) == {"GET", "POST", "OPTIONS"}


def test_422_body_matches_its_schema_and_datetimes_are_iso_only(client, auth) -> None:
    r = client.get(f"{API}/runs", params={"created_before": "0.5"}, headers=auth)
    assert r.status_code == 422
    (err,) = r.json()["detail"]
    assert set(err) == {"loc", "msg", "type", "field"}
    assert err["field"] == "created_before"
    ok = client.get(f"{API}/runs", params={"created_before": "2030-01-01T00:00:00Z"}, headers=auth)
    assert ok.status_code == 200
    cross = client.post(f"{API}/runs", json={"spec": {"users_per_round": 30}}, headers=auth)
    assert cross.status_code == 422
    assert cross.json()["detail"][0]["type"] == "value_error"


def test_openapi_documents_spec_limits_and_media_types(client) -> None:
    doc = client.get(f"{API}/openapi.json").json()
    schemas = doc["components"]["schemas"]
    assert "rounds" in schemas["ExperimentSpecInput"]["properties"]
    assert not schemas["ExperimentSpecInput"].get("required")  # partial specs are accepted
    assert "partition.alpha" in schemas["SweepGridFields"]["properties"]
    runs = doc["paths"][f"{API}/runs"]
    (limit,) = [p for p in runs["get"]["parameters"] if p["name"] == "limit"]
    assert limit["schema"]["maximum"] == client.app.state.settings.max_page_size
    assert {"401", "422", "429", "503", "413"} <= set(runs["post"]["responses"])
    events = doc["paths"][f"{API}/runs/{{run_id}}/events"]["get"]["responses"]["200"]
    assert "text/event-stream" in events["content"]
    summary = doc["paths"][f"{API}/sweeps/{{sweep_id}}/summary"]["get"]["responses"]["200"]
    assert "text/csv" in summary["content"]


def test_clone_changes_may_name_parameters_without_the_algorithm(client, auth) -> None:
    """A clone's `changes.algorithm` may omit `name` (the schema says so, and the API merges it
    over the run's own algorithm); a summary's `group_by` must look like dotted fields."""
    doc = client.get(f"{API}/openapi.json").json()
    changes = doc["components"]["schemas"]["SpecChanges"]
    own = [s for s in changes["properties"]["algorithm"]["anyOf"] if "properties" in s]
    assert own
    assert "name" not in own[0]["properties"]
    assert "gen_batch_size" in own[0]["properties"]
    clone = doc["components"]["schemas"]["RunClone"]["properties"]["changes"]
    assert "SpecChanges" in json.dumps(clone)
    run = client.post(f"{API}/runs", json={"spec": {"algorithm": {"name": "fedgen"}}}, headers=auth)
    rid = run.json()["id"]
    ok = client.post(
        f"{API}/runs/{rid}/clone",
        json={"changes": {"algorithm": {"gen_batch_size": 64}}},
        headers=auth,
    )
    assert ok.status_code == 202, ok.text
    assert ok.json()["spec"]["algorithm"]["name"] == "fedgen"
    assert ok.json()["spec"]["algorithm"]["gen_batch_size"] == 64
    summary = doc["paths"][f"{API}/sweeps/{{sweep_id}}/summary"]["get"]["parameters"]
    (group_by,) = [p for p in summary if p["name"] == "group_by"]
    assert group_by["schema"]["anyOf"][0]["pattern"]
