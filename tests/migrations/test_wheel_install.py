"""The installed project migrates: a wheel in a fresh virtual environment, no source tree.

The wheel is built as the Dockerfile's build stage builds it (the same files copied, the same
`pip wheel` line) and installed without its source tree on any path, then `fedgen-lab db
upgrade` runs from an empty folder against a new SQLite file and a new Postgres schema.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text

from fedgen.versions import PACKAGES
from tests.support.postgres import PG_BASE, scratch_schema

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# What the Dockerfile's build stage copies: everything the wheel is built from (every package
# the project ships, fedgen.versions.PACKAGES, which a test keeps equal to pyproject's list).
SOURCES = ("pyproject.toml", "README.md", *PACKAGES)
# The build stage's `pip wheel` (offline here, hence no build isolation) and its RUN line.
WHEEL_ARGS = ("wheel", "--no-deps", "--no-build-isolation")
WHEEL_CMD = f"pip {' '.join(WHEEL_ARGS)} -w /wheels ."


@dataclass(frozen=True)
class Installed:
    """A virtual environment holding only the wheel; its dependencies come from .venv."""

    venv: Path
    site: Path
    wheel: Path
    tmp: Path

    def run(
        self, *argv: str, db_url: str, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run from an empty folder, PYTHONPATH unset, with its own FEDGEN_HOME."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FEDGEN_", "PYTHON"))}
        env.pop("VIRTUAL_ENV", None)
        env.update(FEDGEN_HOME=str(self.tmp / "home"), FEDGEN_DATABASE_URL=db_url)
        cwd = self.tmp / "cwd"
        cwd.mkdir(exist_ok=True)
        return subprocess.run(
            list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )


def _repo_heads() -> list[str]:
    """`alembic heads` of the repository, through the root alembic.ini."""
    return sorted(ScriptDirectory.from_config(Config(str(ROOT / "alembic.ini"))).get_heads())


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """Build the wheel from a copy of SOURCES and install it into a new venv, offline."""
    tmp = tmp_path_factory.mktemp("wheel")
    src, wheels, venv = tmp / "src", tmp / "wheels", tmp / "venv"
    src.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=skip)
        else:
            shutil.copy2(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, *WHEEL_ARGS, "-w", str(wheels), str(src)], check=True, timeout=300)
    (wheel,) = wheels.glob("fedgen_lab-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run(
        [*pip, "--python", str(py), "install", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=300,
    )
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # Third-party dependencies from this venv's site-packages, added as a plain path: its .pth
    # files (the editable finder, fedgen-lab-root.pth) are not processed, so the source tree
    # stays off sys.path. Written after the install, so pip saw no fedgen-lab already there.
    (site / "zz_fedgen_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return Installed(venv=venv, site=site, wheel=wheel, tmp=tmp)


def test_installed_packages_come_from_the_venv(installed: Installed) -> None:
    """Every package (fedgen, lab, api, worker, dashboard, migrations, fedgen_lab, admin)
    imports from the new venv, not the repo."""
    # Prepare
    code = (
        "import importlib, json, sys\n"
        "from admin.serve import DASHBOARD_APP\n"
        f"mods = [importlib.import_module(p) for p in {list(PACKAGES)!r}]\n"
        "print(json.dumps({'files': [m.__file__ for m in mods], 'path': sys.path,"
        " 'app': str(DASHBOARD_APP)}))"
    )

    # Execute
    proc = installed.run(str(installed.venv / "bin" / "python"), "-c", code, db_url="sqlite://")

    # Assert
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for f in out["files"]:
        assert Path(f).is_relative_to(installed.site), f
    # Nothing of the repository on sys.path but .venv's site-packages (the dependencies).
    deps = Path(sysconfig.get_paths()["purelib"]).resolve()
    on_path = {Path(p).resolve() for p in out["path"] if p}
    assert {p for p in on_path if p.is_relative_to(ROOT)} == {deps}
    assert Path(out["app"]).is_file()
    assert Path(out["app"]).is_relative_to(installed.site)


def test_wheel_holds_every_non_python_file_and_migration(installed: Installed) -> None:
    """Every migration, the revision template and every dashboard page are installed."""
    # Prepare
    wanted = [
        "migrations/env.py",
        "migrations/script.py.mako",
        "dashboard/streamlit_app.py",
        *(p.relative_to(ROOT).as_posix() for p in (ROOT / "migrations/versions").glob("*.py")),
        *(p.relative_to(ROOT).as_posix() for p in (ROOT / "dashboard/app_pages").glob("*.py")),
    ]

    # Execute
    missing = [w for w in wanted if not (installed.site / w).is_file()]

    # Assert
    assert len(wanted) > 5
    assert missing == []


def test_help_runs(installed: Installed) -> None:
    """`fedgen-lab --help` exits 0 and lists the db command."""
    # Execute
    proc = installed.run(str(installed.venv / "bin" / "fedgen-lab"), "--help", db_url="sqlite://")

    # Assert
    assert proc.returncode == 0, proc.stderr
    assert "db" in proc.stdout
    assert "worker" in proc.stdout


def test_db_upgrade_sqlite(installed: Installed) -> None:
    """`fedgen-lab db upgrade` brings a new SQLite file to the repository's head revision."""
    # Prepare
    db = installed.tmp / "lab.db"
    url = f"sqlite:///{db}"

    # Execute
    proc = installed.run(str(installed.venv / "bin" / "fedgen-lab"), "db", "upgrade", db_url=url)

    # Assert
    assert proc.returncode == 0, proc.stderr
    assert "database at head" in proc.stdout
    engine = create_engine(url)
    try:
        with engine.connect() as c:
            versions = sorted(c.execute(text("SELECT version_num FROM alembic_version")).scalars())
    finally:
        engine.dispose()
    assert versions == _repo_heads()


@pytest.mark.postgres
def test_db_upgrade_postgres(installed: Installed) -> None:
    """`fedgen-lab db upgrade` brings a new Postgres schema to the repository's head revision."""
    # Prepare
    with scratch_schema("w_") as (url, schema):
        # Execute
        proc = installed.run(
            str(installed.venv / "bin" / "fedgen-lab"), "db", "upgrade", db_url=url
        )

        # Assert
        assert proc.returncode == 0, proc.stderr
        engine = create_engine(PG_BASE)
        try:
            with engine.connect() as c:
                versions = sorted(
                    c.execute(text(f'SELECT version_num FROM "{schema}".alembic_version')).scalars()
                )
        finally:
            engine.dispose()
        assert versions == _repo_heads()


def _stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuations joined), one list per FROM."""
    lines = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text()).splitlines()
    stages: list[list[str]] = []
    for line in (x.strip() for x in lines):
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        stages[-1].append(line)
    return stages


def test_dockerfile_installs_this_wheel() -> None:
    """The image builds the wheel from SOURCES with WHEEL_CMD; the final stage gets only the wheel."""
    # Prepare
    stages = _stages()

    # Execute
    build, final = stages[0], stages[-1]
    copied = [x for line in build if line.startswith("COPY ") for x in shlex.split(line)[1:-1]]
    final_copies = [line for line in final if line.startswith("COPY ")]

    # Assert
    assert len(stages) == 2, "a build stage and the image"
    assert sorted(copied) == sorted(SOURCES)
    assert f"RUN {WHEEL_CMD}" in build
    assert final_copies == ["COPY --from=build /wheels /wheels"]
    assert any("pip install" in line and "/wheels/" in line for line in final)


def test_compose_dashboard_runs_the_installed_app(installed: Installed) -> None:
    """The compose dashboard is `fedgen-lab dashboard`, which serves the wheel's own app file
    (no .py path of the source tree), and the installed command takes compose's flags."""
    # Prepare
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    argv = shlex.split(services["dashboard"]["command"])
    code = "from admin.serve import DASHBOARD_APP; print(DASHBOARD_APP)"

    # Execute
    app = installed.run(str(installed.venv / "bin" / "python"), "-c", code, db_url="sqlite://")
    helped = installed.run(
        str(installed.venv / "bin" / "fedgen-lab"), "dashboard", "--help", db_url="sqlite://"
    )

    # Assert
    assert argv[:2] == ["fedgen-lab", "dashboard"], argv
    assert not [a for a in argv if a.endswith(".py")], argv
    assert app.returncode == 0, app.stderr
    path = Path(app.stdout.strip())
    assert path.is_relative_to(installed.site), path
    assert path.is_file(), path
    assert helped.returncode == 0, helped.stderr
    for flag in argv[2:]:
        if flag.startswith("--"):
            assert flag in helped.stdout, flag
