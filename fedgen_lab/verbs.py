"""The `fedgen` command's lab verbs, talking to a lab server through this client.

The `fedgen` command (fedgen/cli.py) knows nothing of them: pyproject.toml declares
`add_parsers` in the `fedgen.commands` entry-point group, which `fedgen` loads when the command
word is none of its own (`fedgen --help`, `fedgen submit ...`), so the simulation library
imports no client and `fedgen run` loads no httpx or pandas.

fedgen submit SPEC [--follow] [--tag T] [--note N]   queue a run; print its id and link;
                                --follow: its progress bar, exit 0 when it succeeds, 1 when not
fedgen runs [--status S] [--where F=V] [--limit N]   the lab's runs as a table, newest first
fedgen follow RUN_ID            a run's progress bar until it ends (exit as --follow)
fedgen cancel RUN_ID            ask a run to stop
fedgen pull RUN_ID [--out DIR] [--checkpoints none|final|all]
                                the run as a local run folder (`fedgen resume DIR` continues it)
fedgen push DIR [--tag T] [--checkpoints none|final|all]
                                a local run folder as a lab run (marked pushed; the same folder
                                twice makes one run)

Every verb takes --api URL and --token T (default FEDGEN_API_URL, FEDGEN_TOKEN).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fedgen.spec import load_spec_data
from fedgen.stats import format_acc
from fedgen_lab.errors import LabError, LabValidationError, RunFailed
from fedgen_lab.lab import Lab, Run, connect

EXIT_INVALID = 2
DEFAULT_LIMIT = 20


def _connect(args: argparse.Namespace) -> Lab:
    return connect(args.api, args.token)


def _follow(run: Run) -> int:
    """Draw the run's progress on stderr until it ends: 0 when it succeeded, else 1 with its
    error on stderr."""
    try:
        run.wait(progress=True, check=True)
    except RunFailed:
        error = run.state.error or "no error recorded"
        print(f"run {run.id} {run.status}: {error}", file=sys.stderr)
        return 1
    summary = run.summary or {}
    print(f"run {run.id} succeeded: final {format_acc(summary.get('final_acc'))}")
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    spec: dict[str, Any] = load_spec_data(args.spec)
    if not isinstance(spec, dict):
        print(f"error: {args.spec}: a spec file holds a mapping of fields", file=sys.stderr)
        return EXIT_INVALID
    if args.tag:
        spec["tags"] = [*spec.get("tags", []), *args.tag]
    if args.note is not None:
        spec["note"] = args.note
    run = _connect(args).submit(spec)
    print(run.id)
    print(f"{run.url}  ({run.status}, {run.rounds} rounds)")
    return _follow(run) if args.follow else 0


def cmd_follow(args: argparse.Namespace) -> int:
    return _follow(_connect(args).run(args.run_id))


def cmd_cancel(args: argparse.Namespace) -> int:
    run = _connect(args).run(args.run_id).cancel()
    print(
        f"run {run.id}: {run.status}{' (cancel requested)' if run.state.cancel_requested else ''}"
    )
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    lab = _connect(args)
    rows = [
        (
            r.id[:8],
            str(r.status),
            str(r.spec.get("algorithm", {}).get("name", "")),
            str(r.spec.get("data", {}).get("name", "")),
            f"{r.current_round}/{r.rounds}",
            format_acc(r.last_acc),
            r.owner,
            ",".join(r.tags),
        )
        for r in lab.iter_runs(args.limit, status=args.status, where=args.where or None)
    ]
    head = ("id", "status", "algorithm", "dataset", "round", "acc", "owner", "tags")
    widths = [max(len(str(c)) for c in col) for col in zip(head, *rows, strict=False)]
    for line in (head, *rows):
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    return 0


def cmd_pull(args: argparse.Namespace) -> int:
    run = _connect(args).run(args.run_id)
    out = (
        Path(args.out)
        if args.out
        else Path("runs") / f"{run.spec['algorithm']['name']}-{run.id[:8]}"
    )
    run.pull(out, args.checkpoints, force=args.force)
    print(f"run {run.id} ({run.status}, round {run.state.current_round}/{run.rounds}): {out}")
    return 0


def cmd_push(args: argparse.Namespace) -> int:
    run, created = _connect(args).push(args.dir, args.tag or [], args.checkpoints)
    what = "pushed as run" if created else "already pushed: run"
    print(run.id)
    print(f"{args.dir} {what} {run.id} ({run.url})")
    return 0


def _run_errors(func: Any) -> Any:
    """A verb whose client errors print one line (the per-field messages of a rejected spec
    one per line) instead of a traceback: exit 2 for a rejected request, else 1."""

    def run(args: argparse.Namespace) -> int:
        try:
            code: int = func(args)
            return code
        except LabValidationError as exc:
            for field, message in exc.fields.items() or [("(request)", exc.message)]:
                print(f"error: {field}: {message}", file=sys.stderr)
            return EXIT_INVALID
        except LabError as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            return 1

    return run


def add_parsers(sub: Any) -> None:
    """`submit`, `runs`, `follow`, `pull`, `push` and `cancel` on the `fedgen` command's
    subparsers (the `fedgen.commands` entry point)."""
    server = argparse.ArgumentParser(add_help=False)
    server.add_argument("--api", default=None, help="the lab's URL (default FEDGEN_API_URL)")
    server.add_argument("--token", default=None, help="API token (default FEDGEN_TOKEN)")

    s = sub.add_parser("submit", parents=[server], help="queue a spec as a lab run")
    s.add_argument("spec", help="YAML or JSON spec")
    s.add_argument("--follow", action="store_true", help="show its progress until it ends")
    s.add_argument("--tag", action="append", metavar="T", help="a tag (repeat for several)")
    s.add_argument("--note", metavar="N", help="the run's note")
    s.set_defaults(func=_run_errors(cmd_submit))

    r = sub.add_parser("runs", parents=[server], help="the lab's runs, newest first")
    r.add_argument(
        "--status",
        metavar="S",
        help="only runs with this status (queued, running, ...: the lab checks the word)",
    )
    r.add_argument("--where", action="append", metavar="FIELD=VALUE", help="a spec field filter")
    r.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N", help="at most N")
    r.set_defaults(func=_run_errors(cmd_runs))

    f = sub.add_parser("follow", parents=[server], help="a lab run's progress until it ends")
    f.add_argument("run_id")
    f.set_defaults(func=_run_errors(cmd_follow))

    p = sub.add_parser("pull", parents=[server], help="write a lab run as a local run folder")
    p.add_argument("run_id")
    p.add_argument("--out", metavar="DIR", help="default runs/<algorithm>-<id prefix>")
    p.add_argument(
        "--checkpoints",
        choices=["none", "final", "all"],
        default="final",
        help="which checkpoints to download (final: the last round's, what resume needs)",
    )
    p.add_argument("--force", action="store_true", help="replace a run folder already there")
    p.set_defaults(func=_run_errors(cmd_pull))

    u = sub.add_parser("push", parents=[server], help="upload a local run folder as a lab run")
    u.add_argument("dir")
    u.add_argument("--tag", action="append", metavar="T", help="a tag (repeat for several)")
    u.add_argument(
        "--checkpoints",
        choices=["none", "final", "all"],
        default="final",
        help="which checkpoints to upload (none: the final model alone, which the lab requires)",
    )
    u.set_defaults(func=_run_errors(cmd_push))

    c = sub.add_parser("cancel", parents=[server], help="ask a lab run to stop")
    c.add_argument("run_id")
    c.set_defaults(func=_run_errors(cmd_cancel))
