"""admin/serve.py: `up`'s children and policy, and the API started from the imported app
factory."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from admin import serve
from admin.cli import main
from api.main import create_app
from worker import supervisor

ROOT = Path(__file__).resolve().parents[2]


def test_run_up_makes_only_the_api_critical(monkeypatch: pytest.MonkeyPatch) -> None:
    """`fedgen-lab up` supervises api, worker and dashboard with only the API critical."""
    # Prepare
    seen: dict[str, object] = {}

    def fake_supervise(specs: list[tuple[str, list[str], dict[str, str]]], **kw: object) -> int:
        seen.update(kw, names=[name for name, _, _ in specs])
        return 0

    monkeypatch.setattr(supervisor, "supervise", fake_supervise)
    # Execute
    serve.run_up("127.0.0.1", 8000, 8501, dashboard=True)
    # Assert
    assert seen["critical"] == {"api"}
    assert seen["names"] == ["api", "worker", "dashboard"]


def test_up_starts_the_api_through_admin_and_the_worker_through_its_own_start() -> None:
    """The API child is `python -m admin api`; the worker child is `python -m worker` with the
    flags `fedgen-lab worker` takes."""
    cmds = dict(serve.commands("127.0.0.1", 8000, 8501, dashboard=False, embedded=True))
    assert cmds["api"][:4] == [sys.executable, "-m", "admin", "api"]
    assert cmds["worker"] == [
        *(sys.executable, "-m", "worker", "--queues", "cpu,gpu"),
        *("--loglevel", "WARNING", "--quiet", "--embedded"),
    ]
    assert "dashboard" not in cmds


def test_api_gives_uvicorn_the_imported_app_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    """`fedgen-lab api` hands uvicorn `api.main.create_app` itself (an import the layering test
    sees), as a factory, with the flags' address and log level."""
    import uvicorn

    seen: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw, app=app))
    assert main(["api", "--port", "8123", "--log-level", "warning"]) == 0
    assert seen["app"] is create_app
    assert seen["factory"] is True
    assert (seen["host"], seen["port"], seen["log_level"]) == ("127.0.0.1", 8123, "warning")
    assert seen["proxy_headers"] is False


def test_the_dashboard_command_carries_the_repository_streamlit_settings() -> None:
    """`fedgen-lab up` and `fedgen-lab dashboard` may start anywhere, where Streamlit does not
    read the repository's .streamlit/config.toml: the command passes each of its settings."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    cmd = serve.dashboard_command("python", "app.py", "127.0.0.1", 8501)
    flags = dict(zip(cmd[5::2], cmd[6::2], strict=True))
    for section, options in config.items():
        for name, value in options.items():
            expected = str(value).lower() if isinstance(value, bool) else str(value)
            assert flags[f"--{section}.{name}"] == expected
