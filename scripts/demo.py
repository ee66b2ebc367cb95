"""`make demo`: start the lab on the embedded default and run a FedGen-vs-FedAvg comparison.

Starts `fedgen-lab up` (API, worker, dashboard) with SQLite and the SQLite broker
under FEDGEN_HOME (`up` starts its worker with --embedded on them), creates a local user, submits the sweep in
examples/fedgen-vs-fedavg.yaml, prints the URLs and the token, and follows the
runs round by round. The lab keeps running for the dashboard until Ctrl-C
(set FEDGEN_DEMO_EXIT=1 to stop once the sweep is done).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import webbrowser
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SWEEP = ROOT / "examples" / "fedgen-vs-fedavg.yaml"
TERMINAL = {"succeeded", "failed", "cancelled"}


def free_port(preferred: int) -> int:
    """`preferred` if nothing listens there, else any free port."""
    for port in (preferred, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise RuntimeError("no free port")


def lab(*args: str, env: dict[str, str]) -> str:
    out = subprocess.run(
        [str(BIN / "fedgen-lab"), *args], env=env, check=True, capture_output=True, text=True
    )
    return out.stdout


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"fedgen-lab up exited with code {proc.returncode}")
        try:
            if httpx.get(f"{url}/ready", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"the lab did not become ready at {url} within {timeout_s:.0f}s")


def _pm(mean: float | None, std: float | None) -> str:
    return "-" if mean is None else f"{100 * mean:.1f} ± {100 * (std or 0.0):.1f}"


def summary_table(groups: list[dict[str, Any]]) -> str:
    """The sweep summary as a few readable lines: accuracy in %, mean ± std over finished seeds."""
    width = max([len(g["label"]) for g in groups] + [5])
    lines = [
        "sweep summary: test accuracy (%), mean ± std over the finished seeds",
        f"  {'group':<{width}}  {'n':>2}  {'final (round)':>20}  {'top-5':>12}",
    ]
    for g in groups:
        at = "" if g["final_round"] is None else f" ({g['final_round']})"
        final = _pm(g["final_mean"], g["final_std"]) + at
        top5 = _pm(g["top5_mean"], g["top5_std"])
        lines.append(f"  {g['label']:<{width}}  {g['n']:>2}  {final:>20}  {top5:>12}")
    return "\n".join(lines)


def follow(api: str, headers: dict[str, str], run_ids: list[str], labels: dict[str, str]) -> None:
    """Print one line per new round of each run until all are finished."""
    seen = dict.fromkeys(run_ids, -1)
    status: dict[str, str] = {}
    while True:
        for rid in run_ids:
            r = httpx.get(
                f"{api}/runs/{rid}/metrics",
                params={"since_round": seen[rid]},
                headers=headers,
                timeout=10,
            )
            r.raise_for_status()
            body: dict[str, Any] = r.json()
            status[rid] = body["status"]
            run_rounds = body.get("rounds", [])
            accs = body.get("metrics", {}).get("test_acc", [])
            for rnd, acc in zip(run_rounds, accs, strict=False):
                print(f"  {labels[rid]:<16} round {rnd:>3}  test_acc {acc:.4f}", flush=True)
                seen[rid] = max(seen[rid], rnd)
        if all(status.get(rid) in TERMINAL for rid in run_ids):
            return
        time.sleep(2)


def main() -> int:
    env = dict(os.environ)
    env.setdefault("FEDGEN_HOME", str(Path.home() / ".fedgen"))
    port = free_port(int(env.get("FEDGEN_DEMO_PORT", "8000")))
    dash_port = free_port(int(env.get("FEDGEN_DEMO_DASHBOARD_PORT", "8501")))
    base = f"http://127.0.0.1:{port}"
    api = f"{base}/api/v1"
    print(
        f"FedGen Lab demo (FEDGEN_HOME={env['FEDGEN_HOME']}, SQLite database and broker)",
        flush=True,
    )
    lab("db", "upgrade", env=env)
    token = (
        lab("users", "create", f"demo-{int(time.time())}", "--admin", env=env)
        .strip()
        .splitlines()[-1]
    )
    env.update({"FEDGEN_TOKEN": token, "FEDGEN_API_URL": base})
    up = subprocess.Popen(
        [str(BIN / "fedgen-lab"), "up", "--port", str(port), "--dashboard-port", str(dash_port)],
        env=env,
        start_new_session=True,
    )

    def stop(*_: object) -> None:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGTERM)
            try:
                up.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)

    signal.signal(signal.SIGTERM, lambda *_: (stop(), sys.exit(143)))
    try:
        wait_ready(base, up)
        headers = {"Authorization": f"Bearer {token}"}
        sweep = yaml.safe_load(SWEEP.read_text())
        r = httpx.post(f"{api}/sweeps", json=sweep, headers=headers, timeout=30)
        r.raise_for_status()
        run_ids: list[str] = r.json()["run_ids"]
        labels = {}
        for rid in run_ids:
            spec = httpx.get(f"{api}/runs/{rid}", headers=headers, timeout=10).json()["spec"]
            labels[rid] = f"{spec['algorithm']['name']} seed {spec['seed']}"
        # A short link: the sweep id brings all its runs (the Compare page keeps its view in the
        # URL). It loads from the root, which forwards to /compare: no 404 probes in the console.
        compare = f"http://127.0.0.1:{dash_port}/?page=compare&sweep={r.json()['id']}"
        print(
            f"\n  API        {api}\n  API docs   {base}/docs\n  dashboard  {compare}\n"
            f"  token      {token}\n\nsubmitted sweep {sweep['name']!r}: {len(run_ids)} runs\n",
            flush=True,
        )
        if os.environ.get("DISPLAY") or sys.platform == "darwin":
            webbrowser.open(compare)  # a desktop session: show the sweep as it runs
        follow(api, headers, run_ids, labels)
        summary = httpx.get(f"{api}/sweeps/{r.json()['id']}/summary", headers=headers).json()
        print("\n" + summary_table(summary["groups"]), flush=True)
        print(f"dashboard: {compare}", flush=True)
        if env.get("FEDGEN_DEMO_EXIT") == "1":
            return 0
        print("the lab keeps running; Ctrl-C stops API, worker and dashboard", flush=True)
        up.wait()
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
