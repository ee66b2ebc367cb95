"""`make contract`: Schemathesis with every check against a live `fedgen-lab api` on Postgres.

A scratch Postgres schema (dropped at the end), FEDGEN_HOME in a temporary folder, a user
from `fedgen-lab users create` whose token goes into every request, the API on a free
port, then `schemathesis run --checks all`. Exits with Schemathesis's status (non-zero on
any failure). The broker is Celery's in-memory transport: submitted runs stay queued.

    python -m scripts.contract [--max-examples N] [--seed S] [-- extra schemathesis args]

FEDGEN_TEST_POSTGRES_URL names the database (default the test suite's).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOOKS = ROOT / "tests" / "api" / "contract_hooks.py"
PG_BASE = os.environ.get(
    "FEDGEN_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_up(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the API exited with {proc.returncode} before it was up")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"the API did not answer {url} within {timeout_s:.0f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--max-examples", type=int, default=120, help="cases per operation and phase")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", default="1")
    p.add_argument("--min-cases", type=int, default=0, help="fail with fewer generated cases")
    p.add_argument("extra", nargs="*", help="more schemathesis arguments (after --)")
    args = p.parse_args(argv)

    from sqlalchemy import text

    from api.db import make_engine

    schema = f"contract_{uuid.uuid4().hex[:10]}"
    admin = make_engine(PG_BASE, pool_size=1)
    with admin.begin() as c:
        c.execute(text(f'CREATE SCHEMA "{schema}"'))
    home = Path(tempfile.mkdtemp(prefix="fedgen-contract-"))
    env = {
        **os.environ,
        "FEDGEN_HOME": str(home),
        "FEDGEN_DATABASE_URL": f"{PG_BASE}?options=-csearch_path%3D{schema}",
        "FEDGEN_BROKER_URL": "memory://",
        # The contract run is one client sending fast: keep the limits out of its way.
        "FEDGEN_SUBMIT_RATE": "100000/minute",
        "FEDGEN_AUTH_FAIL_RATE": "100000/minute",
    }
    py = sys.executable
    api: subprocess.Popen[bytes] | None = None
    try:
        out = subprocess.run(
            [py, "-m", "worker.lab_cli", "users", "create", "contract", "--admin"],
            env=env,
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
        token = out.stdout.strip().splitlines()[-1]
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        api = subprocess.Popen(
            [py, "-m", "worker.lab_cli", "api", "--port", str(port), "--log-level", "warning"],
            env=env,
            cwd=ROOT,
        )
        _wait_up(f"{base}/health", api)
        st = shutil.which("schemathesis", path=str(Path(py).parent)) or "schemathesis"
        cmd = [
            st,
            "run",
            f"{base}/api/v1/openapi.json",
            "--checks",
            "all",
            "--max-examples",
            str(args.max_examples),
            "--seed",
            str(args.seed),
            "--workers",
            args.workers,
            "--header",
            f"Authorization: Bearer {token}",
            "--suppress-health-check",
            "all",
            *args.extra,
        ]
        started = time.monotonic()
        proc = subprocess.run(
            cmd,
            # The hooks import this checkout's fedgen and api, not an installed copy.
            env={
                **os.environ,
                "SCHEMATHESIS_HOOKS": str(HOOKS),
                "NO_COLOR": "1",
                "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        sys.stdout.write(proc.stdout)
        m = re.search(r"(\d+) generated", proc.stdout)
        cases = int(m.group(1)) if m else 0
        print(
            f"contract: {cases} cases, schemathesis exit {proc.returncode}, "
            f"{time.monotonic() - started:.0f} s"
        )
        if proc.returncode == 0 and cases < args.min_cases:
            print(f"contract: fewer than {args.min_cases} cases")
            return 1
        return proc.returncode
    finally:
        if api is not None:
            api.terminate()
            try:
                api.wait(10)
            except subprocess.TimeoutExpired:
                api.kill()
        with admin.begin() as c:
            c.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
