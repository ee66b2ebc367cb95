"""What `fedgen-lab` commands print they connect to, and `worker` refusing the embedded SQLite
lab unless given --embedded (issue 18, item 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from admin.cli import main
from lab.config import Settings, get_settings
from lab.connections import embedded_parts, hide_password
from worker import main as worker_main
from worker import supervisor

ROOT = Path(__file__).resolve().parents[2]
LAB = [sys.executable, "-m", "admin"]
PG = "postgresql://lab:s3cret@db.example:5432/lab"
REDIS = "redis://:hunter2@redis.example:6379/0"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """FEDGEN_HOME in tmp_path, no database or broker URL (the embedded defaults)."""
    monkeypatch.setenv("FEDGEN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FEDGEN_DATABASE_URL", raising=False)
    monkeypatch.delenv("FEDGEN_BROKER_URL", raising=False)
    get_settings.cache_clear()
    yield dict(os.environ, PYTHONPATH=str(ROOT))
    get_settings.cache_clear()


def _use(monkeypatch: pytest.MonkeyPatch, **urls: str) -> None:
    for key, value in urls.items():
        monkeypatch.setenv(f"FEDGEN_{key.upper()}", value)
    get_settings.cache_clear()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (PG, "postgresql://lab:***@db.example:5432/lab"),
        (
            "postgresql+psycopg://u:p@h/db?sslmode=require",
            "postgresql+psycopg://u:***@h/db?sslmode=require",
        ),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("sqlite:////tmp/lab.db", "sqlite:////tmp/lab.db"),
        (REDIS, "redis://:***@redis.example:6379/0"),
        ("redis://user:pw@h:6379/0", "redis://user:***@h:6379/0"),
        (
            "rediss://:pw@h:6380/1?ssl_cert_reqs=required",
            "rediss://:***@h:6380/1?ssl_cert_reqs=required",
        ),
        ("amqp://guest:guest@rabbit//", "amqp://guest:***@rabbit//"),
        (
            "redis://:a@h1:6379/0;redis://:b@h2:6379/0",
            "redis://:***@h1:6379/0;redis://:***@h2:6379/0",
        ),
        ("sqla+sqlite:////tmp/broker.db", "sqla+sqlite:////tmp/broker.db"),
        ("memory://", "memory://"),
    ],
)
def test_hide_password(url: str, shown: str) -> None:
    """Passwords show as ***; the rest of the URL is kept."""
    assert hide_password(url) == shown


@pytest.mark.parametrize(
    ("database", "broker", "parts"),
    [
        ("", "", ["database", "broker"]),
        ("sqlite:////x/lab.db", REDIS, ["database"]),
        (PG, "", ["broker"]),
        (PG, "sqla+sqlite:////x/b.db", ["broker"]),
        (PG, REDIS, []),
        (PG, "sqla+postgresql://u:p@h/db", []),
    ],
)
def test_embedded_is_an_sqlite_database_or_the_sqlite_broker(
    tmp_path: Path, database: str, broker: str, parts: list[str]
) -> None:
    """Unset URLs mean the SQLite files under FEDGEN_HOME; an explicit sqlite: counts too."""
    s = Settings(home=tmp_path, database_url=database, broker_url=broker)
    assert embedded_parts(s) == parts


@pytest.mark.parametrize(
    ("urls", "says"),
    [
        ({}, ["FEDGEN_DATABASE_URL is not set", "FEDGEN_BROKER_URL is not set"]),
        (
            {"FEDGEN_DATABASE_URL": "sqlite:///{home}/mine.db", "FEDGEN_BROKER_URL": REDIS},
            ["FEDGEN_DATABASE_URL is set to SQLite", "set explicitly or not"],
        ),
        ({"FEDGEN_DATABASE_URL": PG}, ["FEDGEN_BROKER_URL is not set"]),
    ],
)
@pytest.mark.slow  # child processes
def test_worker_refuses_the_embedded_lab_without_a_traceback(
    env: dict[str, str], tmp_path: Path, urls: dict[str, str], says: list[str]
) -> None:
    """No --embedded: exit 2, a message naming both variables and --embedded; nothing started."""
    run_env = {**env, **{k: v.format(home=tmp_path) for k, v in urls.items()}}
    out = subprocess.run(
        [*LAB, "worker", "--slots", "1"],
        env=run_env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    for text in [*says, "FEDGEN_DATABASE_URL (e.g.", "FEDGEN_BROKER_URL (e.g.", "--embedded"]:
        assert text in out.stderr
    assert "s3cret" not in out.stderr
    assert "hunter2" not in out.stderr
    assert out.stdout == ""


def test_worker_with_embedded_starts_and_prints_what_it_uses(
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """--embedded: the one-slot worker starts on the SQLite files, saying so, and says which
    datasets it offers (MNIST files written in torchvision's layout under FEDGEN_DATA)."""
    started: list[str] = []
    monkeypatch.setattr(worker_main, "_run_celery_worker", lambda _a, q: started.append(q) or 0)
    home = Path(env["FEDGEN_HOME"])
    data = tmp_path / "data"
    (data / "MNIST" / "raw").mkdir(parents=True)
    for name in ("train-images-idx3", "train-labels-idx1", "t10k-images-idx3", "t10k-labels-idx1"):
        (data / "MNIST" / "raw" / f"{name}-ubyte.gz").write_bytes(b"x")
    monkeypatch.setenv("FEDGEN_DATA", str(data))
    assert main(["worker", "--slots", "1", "--embedded"]) == 0
    assert started == ["cpu"]
    lines = capsys.readouterr().err.splitlines()
    assert lines[:4] == [
        "fedgen-lab worker",
        f"  database:    sqlite:///{home / 'lab.db'}  (embedded SQLite)",
        f"  broker:      sqla+sqlite:///{home / 'broker.db'}  (embedded SQLite)",
        f"  checkpoints: in the database (legacy files: {home / 'checkpoints'})",
    ]
    # What it offers: the datasets whose files it finds (synthetic needs none).
    assert lines[4].startswith("  datasets:    ")
    offered = lines[4].split(":", 1)[1].split("(")[0]
    assert {"mnist", "synthetic"} <= {d.strip() for d in offered.split(",")}
    assert "emnist-letters" not in offered
    assert len(lines) == 5


def test_worker_on_a_server_lab_needs_no_flag_and_hides_passwords(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Postgres + Redis: the worker starts without --embedded; no password is printed."""
    _use(monkeypatch, database_url=PG, broker_url=REDIS)
    started: list[str] = []
    monkeypatch.setattr(worker_main, "_run_celery_worker", lambda _a, q: started.append(q) or 0)
    assert main(["worker", "--slots", "1", "--queues", "gpu"]) == 0
    assert started == ["gpu"]
    err = capsys.readouterr().err
    assert "  database:    postgresql+psycopg://lab:***@db.example:5432/lab\n" in err
    assert "  broker:      redis://:***@redis.example:6379/0\n" in err
    assert "s3cret" not in err
    assert "hunter2" not in err
    assert "embedded" not in err


def test_slots_inherit_embedded_and_print_nothing_of_their_own(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`worker --slots 2 --embedded` starts slots with --embedded and --slot-child; a slot
    child neither prints the connections again nor checks them."""
    seen: dict[str, Any] = {}

    def fake_supervise(specs: list[tuple[str, list[str], dict[str, str]]], **_kw: object) -> int:
        seen["argvs"] = [argv for _, argv, _ in specs]
        return 0

    monkeypatch.setattr(supervisor, "supervise", fake_supervise)
    assert main(["worker", "--slots", "2", "--threads", "1", "--embedded"]) == 0
    assert len(seen["argvs"]) == 2
    for argv in seen["argvs"]:
        assert argv[-2:] == ["--slot-child", "--embedded"]
    assert capsys.readouterr().err.count("fedgen-lab worker\n") == 1
    monkeypatch.setattr(worker_main, "_run_celery_worker", lambda _a, _q: 0)
    assert seen["argvs"][0][1:3] == ["-m", "worker"]
    assert worker_main.main(seen["argvs"][0][3:]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("urls", "embedded"), [({}, True), ({"database_url": PG, "broker_url": REDIS}, False)]
)
def test_up_starts_its_worker_embedded_only_on_the_embedded_lab(
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    urls: dict[str, str],
    embedded: bool,
) -> None:
    """`up` prints its connections, and its worker gets --embedded iff the lab is embedded."""
    _use(monkeypatch, **urls)
    seen: dict[str, Any] = {}
    monkeypatch.setattr("migrations.apply.upgrade", lambda _url: None)
    monkeypatch.setattr(supervisor, "supervise", lambda specs, **_kw: seen.update(specs=specs) or 0)
    assert main(["up", "--no-dashboard"]) == 0
    [worker] = [argv for name, argv, _ in seen["specs"] if name == "worker"]
    assert ("--embedded" in worker) is embedded
    assert capsys.readouterr().err.startswith("fedgen-lab up\n  database:    ")


def test_api_prints_its_connections(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`api` prints the same block (and is not refused on SQLite: one host's lab)."""
    import uvicorn

    _use(monkeypatch, database_url=PG, broker_url=REDIS)
    monkeypatch.setattr(uvicorn, "run", lambda *_a, **_k: None)
    assert main(["api"]) == 0
    home = Path(env["FEDGEN_HOME"])
    assert capsys.readouterr().err.splitlines() == [
        "fedgen-lab api",
        "  database:    postgresql+psycopg://lab:***@db.example:5432/lab",
        "  broker:      redis://:***@redis.example:6379/0",
        f"  checkpoints: in the database (legacy files: {home / 'checkpoints'})",
    ]
