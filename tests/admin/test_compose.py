"""docker-compose.yml names only real entry points (no Docker engine here: parse and check)."""

from __future__ import annotations

import importlib.util
import shlex
import tomllib
from pathlib import Path

import yaml

from admin.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
# The image holds no source tree: compose names the installed files (Dockerfile: the wheel
# installed by python:3.11-slim's pip; tests/migrations/test_wheel_install.py installs it).
IMAGE_SITE = "/usr/local/lib/python3.11/site-packages/"


def _commands() -> list[list[str]]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    out: list[list[str]] = []
    for svc in compose["services"].values():
        cmd = svc.get("command")
        if cmd is None:
            continue
        argv = cmd if isinstance(cmd, list) else shlex.split(cmd)
        if argv[:2] == ["sh", "-c"]:
            out.extend(shlex.split(part) for part in argv[2].split("&&"))
        else:
            out.append(argv)
    return out


def test_every_compose_command_is_a_real_entry_point() -> None:
    """Console scripts exist in pyproject and parse; `python -m X` modules exist; files are
    the installed package's."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    cmds = _commands()
    assert len(cmds) >= 5
    for argv in cmds:
        if argv[0] == "fedgen-lab":
            assert scripts["fedgen-lab"] == "admin.cli:main"
            build_parser().parse_args(argv[1:])  # SystemExit on an unknown subcommand/flag
        elif argv[0] == "redis-server":
            continue  # the image's own server; its options: test_redis_keeps_its_data
        elif argv[0] == "python" and argv[1] == "-m":
            mod = argv[2]
            assert importlib.util.find_spec(mod) is not None, mod
            files = [a for a in argv[3:] if a.endswith(".py")]
            assert all(f.startswith(IMAGE_SITE) for f in files), files
            assert all((ROOT / f.removeprefix(IMAGE_SITE)).exists() for f in files), files
        else:
            raise AssertionError(f"unknown entry point {argv}")
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert '"fedgen-lab", "api"' in dockerfile


def test_compose_has_the_services() -> None:
    """postgres, redis, api, a GPU worker with a device reservation, a CPU worker, dashboard."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert {"postgres", "redis", "api", "worker-gpu", "worker-cpu", "dashboard"} <= set(services)
    devices = services["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]


def test_redis_keeps_its_data() -> None:
    """Redis runs with the append-only file on a named volume, so a restart loses no message."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    redis = compose["services"]["redis"]
    assert shlex.split(redis["command"])[:3] == ["redis-server", "--appendonly", "yes"]
    volume = next(v for v in redis["volumes"] if v.endswith(":/data"))
    assert volume.split(":")[0] in compose["volumes"]
