"""`make demo`: start the lab on the embedded default and run a FedGen-vs-FedAvg comparison.

Starts `fedgen-lab up` (API, worker, dashboard) with SQLite and the SQLite broker
under FEDGEN_HOME (`up` starts its worker with --embedded on them), creates a local user,
submits the sweep in examples/fedgen-vs-fedavg.yaml, prints the URLs and the token, and
follows the runs: a line when each starts and when each ends (final, best, top-5), then the
sweep's table. The lab keeps running for the dashboard until Ctrl-C (set FEDGEN_DEMO_EXIT=1
to stop once the sweep is done).

The demo is quiet: it prints only its own lines. Everything its children print (their
command lines, Streamlit's URL lines, Celery's banner and "Warm shutdown", access logs)
goes to one log file, FEDGEN_HOME/logs/demo.log, named once at the start; only a child
that exits or cannot start is also reported on the terminal (`shown`).

"final" and "best" are written as everywhere (docs/metrics.md): the accuracy of the last
model the protocol evaluates, with its round named when it is not the run's last ('@29'
after 30 rounds under the official protocol), and the highest over the same rounds.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import webbrowser
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import httpx
import yaml

from fedgen.stats import format_mean_std, mean_std, summary_text
from vocab.run_status import stopped_at

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SWEEP = ROOT / "examples" / "fedgen-vs-fedavg.yaml"
TERMINAL = {"succeeded", "failed", "cancelled"}
# The supervisors' (worker/supervisor.py: `up`'s, whose children admin/serve.py names, and the
# worker's over its slots) lines about a child that died or could not start: the only lines of
# the children that reach the terminal.
ALERT = re.compile(
    r"^\[(?P<by>up|worker)\] (?P<child>\S+) (?P<what>exited with .*|could not start .*)$"
)


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


def shown(line: str) -> str | None:
    """What the terminal shows of one line the lab's children printed: None for all but the
    supervisor's report of a child that exited or could not start (all go to the log)."""
    m = ALERT.match(line.strip())
    if m is None:
        return None
    child = m["child"] if m["by"] == "up" else f"worker {m['child']}"
    return f"  ! lab: {child} {m['what']}"


def pump(stream: IO[bytes], log: IO[str], echo: IO[str]) -> None:
    """Copy the children's output into the log, line by line; echo the `shown` ones."""
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace")
        log.write(line)
        log.flush()
        if (alert := shown(line)) is not None:
            # On a terminal, first clear the progress line `follow` redraws.
            echo.write(("\r\x1b[K" if echo.isatty() else "") + alert + "\n")
            echo.flush()


def lab(*args: str, env: dict[str, str], log: IO[str]) -> str:
    """Run a `fedgen-lab` command; its output goes to the log, its stdout is returned."""
    out = subprocess.run(
        [str(BIN / "fedgen-lab"), *args], env=env, capture_output=True, text=True, check=False
    )
    log.write(f"$ fedgen-lab {' '.join(args)}\n{out.stderr}{out.stdout}")
    log.flush()
    if out.returncode != 0:
        raise SystemExit(
            f"fedgen-lab {args[0]} failed (exit {out.returncode}):\n{out.stderr.strip()}"
        )
    return out.stdout


def wait_ready(
    url: str, proc: subprocess.Popen[bytes], log_path: Path, timeout_s: float = 120
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"fedgen-lab up exited with code {proc.returncode}; see {log_path}")
        try:
            if httpx.get(f"{url}/ready", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(
        f"the lab did not become ready at {url} within {timeout_s:.0f}s; see {log_path}"
    )


def run_result(run: dict[str, Any]) -> str:
    """A finished run as one line: its figures in % (docs/metrics.md), or why it stopped."""
    s = run.get("summary") or {}
    if run["status"] == "succeeded" and s:
        return summary_text(
            s["final_acc"],
            s.get("final_round", -1),
            s["best_acc"],
            s.get("best_round", -1),
            s["top5_mean"],
            s["top5_std"],
            run["rounds"],
        )
    at = stopped_at(run.get("current_round"), int(run.get("rounds") or 0))
    error = f": {run['error']}" if run.get("error") else ""
    return f"{run['status']} {at}{error}"


def _rounds_text(rounds: Sequence[int]) -> str:
    """The rounds a group's figure is from: '@29', '@25–29' (differs by seed), '' if none."""
    found = sorted({r for r in rounds if r >= 0})
    if not found:
        return ""
    return f" @{found[0]}" if len(found) == 1 else f" @{found[0]}–{found[-1]}"


def _group_cell(
    mean: float | None, std: float | None, rounds: Sequence[int], last_round: int | None
) -> str:
    text = format_mean_std(mean, std)
    if mean is None or set(rounds) == {last_round}:
        return text  # the last round is not named, as format_acc does for one run
    return text + _rounds_text(rounds)


def summary_table(groups: list[dict[str, Any]], runs: dict[str, dict[str, Any]]) -> str:
    """The sweep's table: per group n, final, best and top-5 in %, mean ± std over finished
    seeds; final and best name their round when it is not the last (docs/metrics.md).

    `groups` are GET /sweeps/{id}/summary's; `runs` are the sweep's runs by id (GET /runs),
    whose summaries give each seed's best and its round.
    """
    width = max([len(g["label"]) for g in groups] + [5])
    lines = [
        "sweep summary: test accuracy, mean ± std over the finished seeds "
        "(final = the last evaluated round, best = the highest; docs/metrics.md)",
        f"  {'group':<{width}}  {'n':>2}  {'final':>20}  {'best':>20}  {'top-5':>15}",
    ]
    for g in groups:
        members = [runs[rid] for rid in g.get("run_ids", []) if rid in runs]
        summaries = [m["summary"] for m in members if m.get("summary")]
        last = {int(m["rounds"]) for m in members}
        last_round = last.pop() if len(last) == 1 else None
        final_rounds = [] if g["final_round"] is None else [int(g["final_round"])]
        if not final_rounds:  # the members differ: name each seed's
            final_rounds = [int(s.get("final_round", -1)) for s in summaries]
        final = _group_cell(g["final_mean"], g["final_std"], final_rounds, last_round)
        bests = [float(s["best_acc"]) for s in summaries]
        best_m, best_s = mean_std(bests) if bests else (None, None)
        best_rounds = [int(s.get("best_round", -1)) for s in summaries]
        best = _group_cell(best_m, best_s, best_rounds, last_round)
        top5 = format_mean_std(g["top5_mean"], g["top5_std"])
        lines.append(f"  {g['label']:<{width}}  {g['n']:>2}  {final:>20}  {best:>20}  {top5:>15}")
    return "\n".join(lines)


def list_runs(api: str, headers: dict[str, str], sweep_id: str) -> dict[str, dict[str, Any]]:
    r = httpx.get(
        f"{api}/runs", params={"sweep_id": sweep_id, "limit": 500}, headers=headers, timeout=10
    )
    r.raise_for_status()
    return {run["id"]: run for run in r.json()["data"]}


def follow(
    api: str, headers: dict[str, str], sweep_id: str, labels: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """Print a line when each run starts and when it ends, until all are finished; on a
    terminal, one line redrawn in place with every running run's round. The last view of
    the runs, by id."""
    tty = sys.stdout.isatty()
    said: dict[str, str] = {}
    width = max(len(x) for x in labels.values())
    while True:
        runs = list_runs(api, headers, sweep_id)
        lines = []
        for rid, label in labels.items():
            run = runs.get(rid)
            if run is None:
                continue
            st = run["status"]
            if st in TERMINAL and said.get(rid) != "done":
                lines.append(f"  {label:<{width}}  {run_result(run)}")
                said[rid] = "done"
            elif st in ("running", "cancelling") and rid not in said:
                lines.append(f"  {label:<{width}}  started")
                said[rid] = "started"
        if tty:
            sys.stdout.write("\r\x1b[K")
        for line in lines:
            print(line, flush=True)
        if all(runs.get(rid, {}).get("status") in TERMINAL for rid in labels):
            return runs
        if tty:
            sys.stdout.write(progress_line(runs[rid] for rid in labels if rid in runs))
            sys.stdout.flush()
        time.sleep(2)


def progress_line(runs: Iterable[dict[str, Any]]) -> str:
    """'  running: 2 · queued: 3 · done: 1 · rounds 34/180' (a terminal's redrawn line)."""
    runs = list(runs)
    count = {
        "running": sum(r["status"] in ("running", "cancelling", "claimed") for r in runs),
        "queued": sum(r["status"] == "queued" for r in runs),
        "done": sum(r["status"] in TERMINAL for r in runs),
    }
    done = sum(max(0, int(r.get("current_round", -1))) for r in runs)
    total = sum(int(r["rounds"]) for r in runs)
    parts = " · ".join(f"{k}: {v}" for k, v in count.items())
    return f"  {parts} · rounds {done}/{total}"


def timing_line(runs: Iterable[dict[str, Any]]) -> str:
    """How the lab's slots were used: the span from the first start to the last end, against
    back-to-back time (each run's own time, summed, over the slots that ran them)."""
    runs = list(runs)
    spans = [
        (datetime.fromisoformat(r["started_at"]), datetime.fromisoformat(r["finished_at"]))
        for r in runs
        if r.get("started_at") and r.get("finished_at")
    ]
    if not spans:
        return "timing: no run started"
    slots = max(1, len({r.get("worker") for r in runs if r.get("worker")}))
    wall = (max(e for _, e in spans) - min(s for s, _ in spans)).total_seconds()
    busy = sum((e - s).total_seconds() for s, e in spans) / slots
    return (
        f"timing: {len(spans)} runs on {slots} slots in {wall:.1f} s (first start to last end);"
        f" back to back {busy:.1f} s (run times summed / slots): {wall / busy:.2f}x"
    )


def main() -> int:
    env = dict(os.environ)
    env.setdefault("FEDGEN_HOME", str(Path.home() / ".fedgen"))
    home = Path(env["FEDGEN_HOME"])
    log_path = home / "logs" / "demo.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("w")
    port = free_port(int(env.get("FEDGEN_DEMO_PORT", "8000")))
    dash_port = free_port(int(env.get("FEDGEN_DEMO_DASHBOARD_PORT", "8501")))
    base = f"http://127.0.0.1:{port}"
    api = f"{base}/api/v1"
    print(f"FedGen Lab demo (FEDGEN_HOME={home}, SQLite database and broker)", flush=True)
    lab("db", "upgrade", env=env, log=log)
    token = (
        lab("users", "create", f"demo-{int(time.time())}", "--admin", env=env, log=log)
        .strip()
        .splitlines()[-1]
    )
    env.update({"FEDGEN_TOKEN": token, "FEDGEN_API_URL": base})
    print(f"starting the lab: API, worker and dashboard (their output: {log_path})", flush=True)
    up = subprocess.Popen(
        [str(BIN / "fedgen-lab"), "up", "--port", str(port), "--dashboard-port", str(dash_port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert up.stdout is not None
    pumping = threading.Thread(target=pump, args=(up.stdout, log, sys.stdout), daemon=True)
    pumping.start()

    def stop(*_: object) -> None:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGTERM)
            try:
                up.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)
        pumping.join(timeout=5)

    signal.signal(signal.SIGTERM, lambda *_: (stop(), sys.exit(143)))
    try:
        wait_ready(base, up, log_path)
        headers = {"Authorization": f"Bearer {token}"}
        sweep = yaml.safe_load(SWEEP.read_text())
        r = httpx.post(f"{api}/sweeps", json=sweep, headers=headers, timeout=30)
        r.raise_for_status()
        sweep_id: str = r.json()["id"]
        run_ids: list[str] = r.json()["run_ids"]
        runs = list_runs(api, headers, sweep_id)
        labels = {
            rid: f"{runs[rid]['spec']['algorithm']['name']} seed {runs[rid]['spec']['seed']}"
            for rid in run_ids
        }
        # A short link: the sweep id brings all its runs (the Compare page keeps its view in the
        # URL). It loads from the root, which forwards to /compare: no 404 probes in the console.
        compare = f"http://127.0.0.1:{dash_port}/?page=compare&sweep={sweep_id}"
        rounds = sweep["base"].get("rounds")
        print(
            f"\n  API        {api}\n  API docs   {base}/docs\n  dashboard  {compare}\n"
            f"  token      {token}\n\nsubmitted sweep {sweep['name']!r}: {len(run_ids)} runs"
            f" of {rounds} rounds; each run's line comes when it starts and when it ends\n",
            flush=True,
        )
        if os.environ.get("DISPLAY") or sys.platform == "darwin":
            webbrowser.open(compare)  # a desktop session: show the sweep as it runs
        runs = follow(api, headers, sweep_id, labels)
        summary = httpx.get(f"{api}/sweeps/{sweep_id}/summary", headers=headers, timeout=30)
        summary.raise_for_status()
        print("\n" + summary_table(summary.json()["groups"], runs), flush=True)
        print(timing_line(runs.values()), flush=True)
        print(f"\ndashboard: {compare}", flush=True)
        if env.get("FEDGEN_DEMO_EXIT") == "1":
            return 0
        print("the lab keeps running; Ctrl-C stops API, worker and dashboard", flush=True)
        up.wait()
        return 0
    except KeyboardInterrupt:
        print("\nstopping the lab", flush=True)
        return 130
    except httpx.HTTPError as exc:  # the API went away or refused: say so, not a traceback
        code = up.poll()
        why = f"the lab exited (code {code})" if code is not None else f"the API failed ({exc})"
        print(f"\n{why}; its output: {log_path}", file=sys.stderr, flush=True)
        return 1
    finally:
        stop()
        log.close()


if __name__ == "__main__":
    sys.exit(main())
