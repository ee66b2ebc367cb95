"""`fedgen-lab dashboard`: the dashboard for any lab, outside Docker (docker-compose uses it too)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from admin.cli import main
from admin.serve import api_url_problem

LAB = [sys.executable, "-m", "admin"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_help_names_its_flags() -> None:
    out = subprocess.run([*LAB, "dashboard", "--help"], capture_output=True, text=True, check=True)
    for flag in ("--port", "--api-url", "--host"):
        assert flag in out.stdout


@pytest.mark.parametrize(
    "url",
    ["ftp://lab/api/v1", "api:8000", "http://u:p@lab:8000/api/v1", "http://lab/api/v1?x=1"],
)
def test_a_url_that_is_not_an_api_address_is_refused(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert api_url_problem(url) is not None
    assert main(["dashboard", "--api-url", url]) == 2
    assert "--api-url" in capsys.readouterr().err


def test_a_lab_address_is_accepted() -> None:
    assert api_url_problem("http://api:8000/api/v1") is None
    assert api_url_problem("https://lab.example") is None


@pytest.mark.slow
def test_it_serves_the_dashboard_for_the_api_it_was_given() -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [*LAB, "dashboard", "--port", str(port), "--api-url", "http://127.0.0.1:9/api/v1"],
        env={k: v for k, v in os.environ.items() if k != "FEDGEN_TOKEN"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        health = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.5)
        assert health is not None
        assert health.status_code == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert "API http://127.0.0.1:9/api/v1" in err.decode()
