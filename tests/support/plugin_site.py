"""Plugins installed for tests: examples/plugins/lrdecay with pip, and a plugin that raises.

`install_example(dest)` pip-installs a copy of examples/plugins/lrdecay (offline: no index,
no build isolation, the venv's setuptools) into `dest`, a folder that goes on PYTHONPATH
(subprocesses) or sys.path (this process): its dist-info makes the entry point visible to
`importlib.metadata`, exactly as an installed distribution's. The venv itself is left alone,
so other test sessions never see the plugin. `broken_plugin(dest)` writes a distribution
whose `fedgen.algorithms` entry point imports a module that raises.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plugins" / "lrdecay"
BROKEN_MESSAGE = "fedgen-broken fails on import on purpose"
BROKEN_ERROR = f"RuntimeError: {BROKEN_MESSAGE}"


def install_example(dest: Path) -> Path:
    """pip install examples/plugins/lrdecay into `dest/site`; returns that folder."""
    src, site = dest / "src", dest / "site"
    # A copy: the build's own folders (build/, *.egg-info) stay out of the repository.
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "tests"))
    pip_install = [sys.executable, "-m", "pip", "install", "--quiet"]
    offline = ["--no-deps", "--no-index", "--no-build-isolation"]
    subprocess.run(
        [*pip_install, *offline, "--target", str(site), str(src)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return site


def broken_plugin(dest: Path) -> Path:
    """A distribution `fedgen-broken` 0.0.1 whose entry point module raises on import."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "fedgen_broken.py").write_text(f"raise RuntimeError({BROKEN_MESSAGE!r})\n")
    info = dest / "fedgen_broken-0.0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fedgen-broken\nVersion: 0.0.1\n")
    (info / "entry_points.txt").write_text("[fedgen.algorithms]\nbroken = fedgen_broken:DECL\n")
    return dest


def pythonpath(*sites: Path) -> str:
    """PYTHONPATH for a child process: the repository, then the given plugin folders."""
    return os.pathsep.join([str(ROOT), *(str(s) for s in sites)])


@contextmanager
def plugins_on_path(*sites: Path) -> Iterator[None]:
    """This process sees the plugins in `sites` (loaded again); afterwards only what it saw."""
    from fedgen import plugins
    from fedgen.algorithms import registry

    # Plugins are registered once per load: start each load from the built-ins alone.
    builtins = {d.name: d for d in registry.builtin_algorithms()}
    sys.path[:0] = [str(s) for s in sites]
    try:
        registry.restore(builtins)
        plugins.load(force=True)
        yield
    finally:
        for s in sites:
            sys.path.remove(str(s))
        registry.restore(builtins)
        plugins.load(force=True)
