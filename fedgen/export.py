"""`fedgen export RUN_ID`: a lab run's spec as a YAML file, and the command that reproduces it.

fedgen export RUN_ID [-o/--out FILE|-] [--force] [--api URL] [--token TOKEN]

RUN_ID is the whole id or any unique prefix of at least 4 hex digits (the pages' 8-character
short ids), as git takes a commit's: the server lists the runs whose id starts so
(GET /runs?id_prefix=...), and an ambiguous prefix is refused with the runs it matches.
An --out that exists and holds something else is refused unless --force; when the printed
command's own folder (runs/<short id>) already holds a run, the output says so and that
`fedgen run` wants --force to write over it.

Fetches the run from the lab server (GET /api/v1/runs/{id} and /runs/{id}/info; FEDGEN_API_URL,
default http://127.0.0.1:8000, and FEDGEN_TOKEN, as the dashboard reads them) and writes its spec
to `run-<short id>.yaml` (`-` writes to stdout) under a comment header: the run's id, status,
final accuracy, what it cost, the versions it ran with, the data files it read (root, path,
size, sha256: check that your copy is the same), and the command that runs it here
(`fedgen run run-<short id>.yaml --out runs/<short id> --threads N`, N the worker's torch threads),
which it also prints, saying whether it repeats the run bit for bit here (other CPU kernels,
torch, a GPU run or a resume on other numerics: it cannot). The file is the
spec the server stored (every default filled in), so `fedgen validate` accepts it and its
result hash is the run's. A bad id, an unknown run, a refused token or an unreachable server:
one line on stderr, exit code 2.

Plain urllib: fedgen stays free of the server's dependencies.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import yaml

from fedgen.resources import format_bytes
from fedgen.rundir import run_files
from fedgen.spec import SpecError, parse_spec
from fedgen.stats import format_acc

DEFAULT_API = "http://127.0.0.1:8000"
API_PREFIX = "/api/v1"
EXIT_ERROR = 2
TIMEOUT_S = 30.0
# A short id is a prefix of at least this many hex digits (git's shortest abbreviation too).
MIN_PREFIX = 4
HEX_PREFIX = re.compile(r"[0-9A-Fa-f-]{1,36}")
RUNS_DIR = "runs"  # the printed command's --out is runs/<short id>
CANDIDATES_SHOWN = 10  # an ambiguous prefix's error lists this many of the runs it matches


class ExportError(Exception):
    """Why the run could not be exported, as one line for the user."""


def base_url(api: str) -> str:
    """`host:8000`, `http://host:8000` or `.../api/v1/` -> `http://host:8000/api/v1`."""
    url = api.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        url = "http://" + url
    return url if url.endswith(API_PREFIX) else url + API_PREFIX


def fetch_run(run_id: str, api: str, token: str | None) -> dict[str, Any]:
    """GET /runs/{id} from the lab server, the id given whole or as any unique prefix of at
    least MIN_PREFIX hex digits (the pages' 8-character short ids), as git takes a commit's;
    ExportError says what went wrong (an ambiguous prefix: the runs it matches)."""
    text = run_id.strip()
    try:
        rid = str(uuid.UUID(text))
    except ValueError:
        rid = resolve_prefix(text, api, token)
    return _get(f"{base_url(api)}/runs/{rid}", rid, api, token)


def resolve_prefix(prefix: str, api: str, token: str | None) -> str:
    """The full id of the one run whose id starts with `prefix` (GET /runs?id_prefix=...: the
    runs any member may read, outside the trash); ExportError when none or several do."""
    digits = prefix.replace("-", "").lower()
    if len(digits) < MIN_PREFIX or not HEX_PREFIX.fullmatch(prefix):
        raise ExportError(
            f"not a run id: {prefix!r} (the full id, or its first {MIN_PREFIX} or more hex "
            "digits, as the Runs page's id column shows them)"
        )
    query = urllib.parse.urlencode({"id_prefix": prefix, "limit": CANDIDATES_SHOWN})
    found = _get(f"{base_url(api)}/runs?{query}", prefix, api, token)
    # Checked here too: a server that predates id_prefix ignores it and lists its newest runs.
    runs = [
        r
        for r in found.get("data") or []
        if isinstance(r, dict) and str(r.get("id", "")).replace("-", "").startswith(digits)
    ]
    if not runs:
        raise ExportError(f"no run whose id starts with {prefix} on {base_url(api)}")
    if len(runs) == 1:
        return str(runs[0]["id"])
    said = found.get("count")
    count = said if isinstance(said, int) and said >= len(runs) else len(runs)
    listed = "; ".join(_candidate(r) for r in runs)
    more = f"; and {count - len(runs)} more" if count > len(runs) else ""
    raise ExportError(
        f"run id prefix {prefix} is ambiguous: {count} runs match: {listed}{more}; "
        "give more of the id"
    )


def fetch_data_files(run_id: str, api: str, token: str | None) -> list[dict[str, Any]] | None:
    """The data files the run read (GET /runs/{id}/info `data_files`); None when the server
    does not say (an older server, or not answered): the header then says so."""
    try:
        info = _get(f"{base_url(api)}/runs/{run_id}/info", run_id, api, token)
    except ExportError:
        return None
    files = info.get("data_files") if isinstance(info, dict) else None
    return [f for f in files if isinstance(f, dict)] if isinstance(files, list) else None


def _candidate(run: dict[str, Any]) -> str:
    """One run an ambiguous prefix matches: `1a2b3c4d-… (carol, fedgen, succeeded, created …)`."""
    spec = run.get("spec") if isinstance(run.get("spec"), dict) else {}
    algorithm = (spec.get("algorithm") or {}).get("name") if isinstance(spec, dict) else None
    return (
        f"{run.get('id')} ({run.get('owner')}, {algorithm or '?'}, {run.get('status')}, "
        f"created {run.get('created_at')})"
    )


def _get(url: str, rid: str, api: str, token: str | None) -> dict[str, Any]:
    """GET `url` (about run `rid`) as JSON; ExportError says what went wrong."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as resp:
            body: dict[str, Any] = json.loads(resp.read())
            return body
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise ExportError(f"no run {rid} on {base_url(api)}") from None
        if exc.code in (401, 403):
            raise ExportError(
                f"{base_url(api)} refused the token ({exc.code}); set FEDGEN_TOKEN or --token"
            ) from None
        raise ExportError(f"{url} answered {exc.code}: {_detail(exc)}") from None
    except (urllib.error.URLError, OSError) as exc:
        why = getattr(exc, "reason", exc)
        raise ExportError(
            f"cannot reach the lab server at {base_url(api)} ({why}); set FEDGEN_API_URL or --api"
        ) from None
    except ValueError:
        raise ExportError(f"{url} did not answer JSON (is it a FedGen Lab server?)") from None


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read().decode("utf-8", "replace")
        detail = json.loads(text).get("detail", text)
    except (ValueError, AttributeError, OSError):
        detail = exc.reason
    return str(detail).splitlines()[0][:200] if detail else ""


def short_id(run_id: str) -> str:
    """The first 8 hex digits of the id (file and folder names)."""
    return run_id.replace("-", "")[:8]


def reproduce_command(spec_file: str, run_id: str, versions: dict[str, Any] | None = None) -> str:
    """The command that runs the exported spec here with the numerics the worker used: its
    torch threads (the reduction order of every float sum depends on them)."""
    threads = str((versions or {}).get("torch_threads") or "")
    extra = f" --threads {threads}" if threads.isdigit() else ""
    return f"fedgen run {shlex.quote(spec_file)} --out {RUNS_DIR}/{short_id(run_id)}{extra}"


def local_numerics() -> dict[str, str]:
    """This machine's torch version and CPU kernels (what a rerun here computes with)."""
    import torch

    return {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def not_bit_for_bit(run: dict[str, Any], here: dict[str, str]) -> list[str]:
    """Why the printed command cannot repeat the run bit for bit here (empty: it can). The
    seeds, split and threads are the run's, so a rerun always agrees in its statistics."""
    versions = run.get("versions") or {}
    why = []
    device = str(run.get("device") or "cpu")
    if not device.startswith("cpu"):
        why.append(f"it ran on {device}; this command computes on the CPU")
    for key, what in (("cpu_capability", "CPU kernels"), ("torch", "torch")):
        theirs = versions.get(key)
        if theirs and here.get(key) and str(theirs) != here[key]:
            why.append(f"the worker's {what} were {theirs}, this machine's are {here[key]}")
    changed = versions.get("numerics_changed") or []
    if changed:
        why.append(
            f"its numerics changed when it resumed ({len(changed)} time(s)): each segment "
            "would need its own threads and machine"
        )
    return why


def render(
    run: dict[str, Any], spec_file: str, data_files: list[dict[str, Any]] | None = None
) -> str:
    """The exported file: a comment header, then the spec as YAML."""
    spec = run.get("spec")
    if not isinstance(spec, dict):
        raise ExportError(f"run {run.get('id')}: the server sent no spec")
    try:
        parsed = parse_spec(spec, f"run {run.get('id')}")
    except SpecError as exc:  # a spec this fedgen cannot read (another version's fields)
        first = exc.errors[0] if exc.errors else ("spec", "invalid")
        raise ExportError(
            f"run {run.get('id')}: this fedgen cannot read its spec ({first[0]}: {first[1]}); "
            "install the code version the run used"
        ) from None
    summary = run.get("summary") or {}
    versions = run.get("versions") or {}
    last = run.get("rounds")
    lines = [
        f"# FedGen Lab run {run.get('id')} ({run.get('status')}), exported by `fedgen export`",
        f"# owner {run.get('owner')}, created {run.get('created_at')}, worker {run.get('worker')}"
        f" on {run.get('device')}",
        f"# final {format_acc(summary.get('final_acc'), summary.get('final_round'), last)}"
        f" · best {format_acc(summary.get('best_acc'), summary.get('best_round'), last)}"
        if summary
        else f"# no final accuracy yet (round {run.get('current_round')} of {run.get('rounds')})",
        f"# cost: {_cost(run)}",
        f"# spec_hash {parsed.spec_hash()} · result_hash {parsed.result_hash()}",
        *_data_lines(data_files),
        "# versions: "
        + ", ".join(f"{k} {v}" for k, v in versions.items() if k != "numerics_changed")
        if versions
        else "# versions: not recorded yet",
    ]
    if versions.get("torch_threads"):
        threads = versions["torch_threads"]
        lines.append(f"# the worker ran torch on {threads} thread(s): the command below does too,")
        lines.append("# so on the same CPU kernels and torch it repeats the run bit for bit")
    lines += [
        "# reproduce it here:",
        f"#   {reproduce_command(spec_file, str(run.get('id')), versions)}",
        "",
    ]
    # Written out even at its default: `fedgen run` gives a spec without it `execution: auto`
    # (fedgen.execution_spec), and the run it reproduces ran as its spec says.
    shown = {**spec, "execution": spec.get("execution", "sequential")}
    body = yaml.safe_dump(shown, sort_keys=False, allow_unicode=True)
    return "\n".join(lines) + body


def _data_lines(files: list[dict[str, Any]] | None) -> list[str]:
    """The header's lines on the data the run read (compare sha256 with your copy's)."""
    if files is None:
        return ["# data files: not reported by the server"]
    if not files:
        return ["# data files: none recorded (generated data, or the run has not started)"]
    lines = ["# data files read (root, path, bytes, sha256):"]
    for f in files:
        lines.append(
            f"#   {f.get('root')} {f.get('path')} {f.get('size')} sha256:{f.get('sha256')}"
        )
    return lines


def _cost(run: dict[str, Any]) -> str:
    cpu = run.get("cpu_s")
    parts = [
        f"{cpu:.1f} CPU s" if isinstance(cpu, int | float) else "CPU s not measured",
        f"peak memory {format_bytes(run.get('peak_rss_bytes'))}",
    ]
    if run.get("gpu_peak_bytes") is not None:
        parts.append(f"GPU peak {format_bytes(run['gpu_peak_bytes'])}")
    if run.get("oom_count"):
        parts.append(f"{run['oom_count']} CUDA out-of-memory")
    return ", ".join(parts)


def cmd_export(args: argparse.Namespace) -> int:
    api = args.api or os.environ.get("FEDGEN_API_URL") or DEFAULT_API
    token = args.token or os.environ.get("FEDGEN_TOKEN")
    try:
        run = fetch_run(args.run_id, api, token)
        rid = str(run.get("id") or args.run_id)
        out: str = args.out or f"run-{short_id(rid)}.yaml"
        spec_file = "run.yaml" if out == "-" else out  # what the command names
        files = fetch_data_files(rid, api, token)
        text = render(run, spec_file, files)
        command = reproduce_command(spec_file, rid, run.get("versions"))
        why = not_bit_for_bit(run, local_numerics())
    except ExportError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_ERROR
    if out != "-" and not args.force and (refusal := overwrite_refusal(Path(out), text)):
        sys.stderr.write(f"error: {refusal}\n")
        return EXIT_ERROR
    if out == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        if why:
            sys.stderr.write("not bit for bit here: " + "; ".join(why) + "\n")
        sys.stderr.write(f"save it as run.yaml, then: {command}\n")
        return 0
    try:
        Path(out).write_text(text)
    except OSError as exc:
        sys.stderr.write(f"error: cannot write {out}: {exc.strerror or exc}\n")
        return EXIT_ERROR
    sys.stdout.write(f"wrote {out} (run {rid}, {run.get('status')})\n")
    if why:
        sys.stdout.write("not bit for bit here (the seed statistics still agree): ")
        sys.stdout.write("; ".join(why) + "\n")
    else:
        sys.stdout.write(
            "this command repeats it bit for bit here (same threads, kernels, torch)\n"
        )
    sys.stdout.write(f"reproduce it with:\n{command}\n")
    taken = run_files(Path(RUNS_DIR) / short_id(rid))
    if taken:
        # `fedgen run` refuses an --out that holds a run: said now, not after the user pasted it.
        sys.stdout.write(
            f"{RUNS_DIR}/{short_id(rid)} already holds a run ({', '.join(taken)}): that command "
            "refuses to write over it; add --force to delete it and run afresh, or change --out\n"
        )
    return 0


def overwrite_refusal(out: Path, text: str) -> str | None:
    """Why `out` is not written over (it exists and holds something else), None when it may
    be: absent, or already exactly `text` (exporting a run twice is no error)."""
    try:
        current = out.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        current = None
    if current == text:
        return None
    return (
        f"--out: {out} already exists (an earlier export, edited, or of another state of the "
        "run); pass --force to write over it, or choose another --out"
    )


def add_parser(sub: Any) -> None:
    """`fedgen export` on the `fedgen` command's subparsers."""
    e = sub.add_parser(
        "export",
        help="write a lab run's spec as YAML with the command that reproduces it here",
        description="Fetch a run from the lab server and write its spec as YAML (a header "
        "comment gives its id, status, final accuracy, versions and the command to run it).",
    )
    e.add_argument(
        "run_id",
        metavar="RUN_ID",
        help="the run's id, or any unique prefix of 4 or more hex digits (the pages' short ids)",
    )
    e.add_argument(
        "-o", "--out", help="the file to write (default run-<short id>.yaml; - for stdout)"
    )
    e.add_argument(
        "--force",
        action="store_true",
        help="write over --out when it exists and differs (else refused: exit 2)",
    )
    e.add_argument("--api", help=f"the lab server (default $FEDGEN_API_URL, else {DEFAULT_API})")
    e.add_argument("--token", help="your API token (default $FEDGEN_TOKEN)")
    e.set_defaults(func=cmd_export)
