"""`make contract`: Schemathesis with every check against a live `fedgen-lab api` on Postgres.

A scratch Postgres schema, FEDGEN_HOME in a temporary folder, a user from `fedgen-lab users
create` whose token goes into every request, the API on a free port, then `schemathesis run
--checks all` (use_after_free and ensure_resource_availability in their trash-aware versions of
scripts/contract_hooks.py), its output printed as it comes. Exits with Schemathesis's status (non-zero on
any failure), 124 when it ran past `--timeout-s`, 130 on Ctrl-C, 143 on SIGTERM; on every one
of these the API and Schemathesis are stopped, the schema dropped and the folder removed.

The broker is Celery's in-memory transport: submitted runs stay queued, so the API runs with
FEDGEN_SSE_MAX_S=2 (a declared setting: an event stream of a run not yet terminal ends after
that long) and every GET /runs/{id}/events case ends.

    python -m scripts.contract [--max-examples N] [--seed S] [--timeout-s T] [-- extra schemathesis args]

FEDGEN_TEST_POSTGRES_URL names the database (default the test suite's).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from types import FrameType
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
HOOKS = ROOT / "scripts" / "contract_hooks.py"
PG_BASE = os.environ.get(
    "FEDGEN_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
#: How long one event stream of the contract's (always queued) runs stays open.
SSE_MAX_S = "2"
TIMED_OUT = 124
HELD = (signal.SIGINT, signal.SIGTERM)  # ignored while cleaning up


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


def _stop(proc: subprocess.Popen[bytes] | subprocess.Popen[str] | None) -> None:
    """Terminate `proc` and its process group (it was started in a session of its own)."""
    if proc is None or proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _echo(stream: IO[str], lines: list[str]) -> None:
    """Copy `stream` to stdout line by line as it comes, keeping the lines."""
    for line in stream:
        lines.append(line)
        sys.stdout.write(line)
        sys.stdout.flush()


def _terminated(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through main's clean-up, as Ctrl-C does


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--max-examples", type=int, default=120, help="cases per operation and phase")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", default="1")
    p.add_argument("--min-cases", type=int, default=0, help="fail with fewer generated cases")
    p.add_argument(
        "--timeout-s",
        type=float,
        default=1800,
        help="stop Schemathesis after this long and fail (exit 124)",
    )
    p.add_argument("extra", nargs="*", help="more schemathesis arguments (after --)")
    args = p.parse_args(argv)

    from sqlalchemy import text

    from lab.db import make_engine

    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if on_main else None
    schema = f"contract_{uuid.uuid4().hex[:10]}"
    admin = make_engine(PG_BASE, pool_size=1)
    created = False
    home: Path | None = None
    api: subprocess.Popen[bytes] | None = None
    st_proc: subprocess.Popen[str] | None = None
    reader: threading.Thread | None = None
    try:
        with admin.begin() as c:
            c.execute(text(f'CREATE SCHEMA "{schema}"'))
        created = True
        home = Path(tempfile.mkdtemp(prefix="fedgen-contract-"))
        print(f"contract: scratch schema {schema}, FEDGEN_HOME {home}", flush=True)
        env = {
            **os.environ,
            "FEDGEN_HOME": str(home),
            "FEDGEN_DATABASE_URL": f"{PG_BASE}?options=-csearch_path%3D{schema}",
            "FEDGEN_BROKER_URL": "memory://",
            # The contract run is one client sending fast: keep the limits out of its way.
            "FEDGEN_SUBMIT_RATE": "100000/minute",
            "FEDGEN_AUTH_FAIL_RATE": "100000/minute",
            "FEDGEN_WEBHOOK_TEST_RATE": "100000/minute",
            # Nor the caps a member holds: its admin mints tokens and submits long specs.
            "FEDGEN_MAX_TOKENS_PER_USER": "10000",
            "FEDGEN_MAX_STREAMS_PER_USER": "10000",
            "FEDGEN_MAX_SUBMISSION_CPU_S": "1e12",
            "FEDGEN_MAX_MEMBER_CPU_S": "1e12",
            # Nor the storage quota: the sweeps it queues are never run, yet their footprint
            # estimates add up (a full quota is a 422 by design, tests/api test it).
            "FEDGEN_QUOTA_BYTES": str(1 << 60),
            # No worker: its runs stay queued, and their event streams would never end.
            "FEDGEN_SSE_MAX_S": SSE_MAX_S,
            # Any host name may be a webhook target (no worker runs here: nothing is ever sent);
            # it must still resolve to a public address, as contract_hooks.py checks too.
            "FEDGEN_WEBHOOK_ALLOW": "*",
        }
        py = sys.executable
        made = subprocess.run(
            [py, "-m", "admin", "users", "create", "contract", "--admin"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            print(f"contract: `fedgen-lab users create` failed:\n{made.stderr}", file=sys.stderr)
            return made.returncode
        token = made.stdout.strip().splitlines()[-1]
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        api = subprocess.Popen(
            [py, "-m", "admin", "api", "--port", str(port), "--log-level", "warning"],
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )
        _wait_up(f"{base}/health", api)
        print(f"contract: API at {base} (pid {api.pid})", flush=True)
        st = shutil.which("schemathesis", path=str(Path(py).parent)) or "schemathesis"
        cmd = [
            st,
            "run",
            f"{base}/api/v1/openapi.json",
            "--checks",
            "all",
            # The trash-aware versions in contract_hooks.py run instead of these two.
            "--exclude-checks",
            "use_after_free,ensure_resource_availability",
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
        st_proc = subprocess.Popen(
            cmd,
            # The hooks import this checkout's fedgen and api, not an installed copy.
            env={
                **os.environ,
                "SCHEMATHESIS_HOOKS": str(HOOKS),
                "NO_COLOR": "1",
                "PYTHONUNBUFFERED": "1",
                # For the hooks: a clone is checked against the run's own spec.
                "FEDGEN_CONTRACT_API": f"{base}/api/v1",
                "FEDGEN_CONTRACT_TOKEN": token,
                "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        assert st_proc.stdout is not None
        lines: list[str] = []
        reader = threading.Thread(target=_echo, args=(st_proc.stdout, lines), daemon=True)
        reader.start()
        try:
            rc = st_proc.wait(args.timeout_s)
        except subprocess.TimeoutExpired:
            _stop(st_proc)
            reader.join(10)
            print(f"contract: schemathesis did not finish within {args.timeout_s:.0f} s; stopped")
            return TIMED_OUT
        reader.join()
        m = re.search(r"(\d+) generated", "".join(lines))
        cases = int(m.group(1)) if m else 0
        print(
            f"contract: {cases} cases, schemathesis exit {rc}, {time.monotonic() - started:.0f} s"
        )
        if rc == 0 and cases < args.min_cases:
            print(f"contract: fewer than {args.min_cases} cases")
            return 1
        return rc
    except KeyboardInterrupt:
        print("contract: interrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        # A second Ctrl-C or SIGTERM must not cut the clean-up short.
        held = {s: signal.signal(s, signal.SIG_IGN) for s in HELD} if on_main else {}
        try:
            _stop(st_proc)
            _stop(api)
            if reader is not None:
                reader.join(10)
            if created:
                with admin.begin() as c:
                    c.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()
            if home is not None:
                shutil.rmtree(home, ignore_errors=True)
        finally:
            for sig, handler in held.items():
                signal.signal(sig, handler)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
