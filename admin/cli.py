"""`fedgen-lab`: api, worker, dashboard, up, db upgrade, users create, tokens, quota, trash,
requeue, checkpoints import: the parser and its entry point.

Every command first prints (to stderr) what it connects to: the database and broker URLs,
passwords hidden, and where checkpoints live (lab/connections.py). `worker` is the worker's own
start (worker/main.py), run in this process with the same flags; it refuses the embedded SQLite
lab unless given --embedded.
"""

from __future__ import annotations

import argparse
import sys

from admin import maintenance, quota, serve, tokens, trash
from worker.main import HELP as WORKER_HELP
from worker.main import add_worker_arguments


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of `fedgen-lab`."""
    where = serve.serve_options()  # where the API listens: api and up
    p = argparse.ArgumentParser(
        prog="fedgen-lab", description="FedGen Lab server: API, workers, database."
    )
    sub = p.add_subparsers(dest="command", required=True)
    serve.add_api_parser(sub, where)
    add_worker_arguments(sub.add_parser("worker", help=WORKER_HELP))
    serve.add_up_parser(sub, where)
    serve.add_dashboard_parser(sub)
    maintenance.add_db_parser(sub)
    tokens.add_users_parser(sub)
    tokens.add_tokens_parser(sub)
    trash.add_trash_parser(sub)
    quota.add_quota_parser(sub)
    maintenance.add_requeue_parser(sub)
    maintenance.add_checkpoints_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `fedgen-lab` console script (and of `python -m admin`)."""
    args = build_parser().parse_args(argv)
    return int(args.fn(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
