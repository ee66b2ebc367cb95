"""`fedgen-lab api`, `dashboard` and `up`: the lab's servers, alone or all on one host.

`up` runs the API, a worker and the dashboard as children of one supervisor
(worker/supervisor.py): only the API's exit stops the lab; a dead worker or dashboard is
restarted alone. The API starts from `api.main.create_app`, imported here; the worker is the
worker's own start (`python -m worker`, worker/main.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

from lab.config import get_settings
from lab.connections import embedded_parts, print_connections

# Under `fedgen-lab up` only the API's exit stops the lab; the worker and dashboard restart.
UP_CRITICAL = frozenset({"api"})
# Found through the package, so `fedgen-lab up` and `dashboard` work from any folder.
DASHBOARD_APP = Path(__file__).resolve().parents[1] / "dashboard" / "streamlit_app.py"


def _cmd_api(args: argparse.Namespace) -> int:
    import uvicorn

    from api.main import create_app

    print_connections("api", get_settings())
    uvicorn.run(
        create_app,
        factory=True,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        # uvicorn would otherwise take X-Forwarded-For from 127.0.0.1 as the client's address
        # before the app sees it: the client is whom FEDGEN_TRUSTED_PROXIES says
        # (api/client_address.py), from the socket's peer.
        proxy_headers=False,
    )
    return 0


def commands(
    host: str, port: int, dashboard_port: int, dashboard: bool, *, embedded: bool = False
) -> list[tuple[str, list[str]]]:
    """The child command lines of `up`; `embedded`: the lab is the embedded SQLite one, which
    the worker then uses on purpose (`--embedded`)."""
    py = sys.executable
    out = [("api", _api_command(py, host, port)), ("worker", _worker_command(py, embedded))]
    app = DASHBOARD_APP
    if dashboard and app.exists():
        out.append(("dashboard", dashboard_command(py, str(app), host, dashboard_port)))
    return out


def _api_command(py: str, host: str, port: int) -> list[str]:
    """`fedgen-lab api` on host:port, logging warnings only."""
    lab = [py, "-m", "admin", "api", "--host", host, "--port", str(port)]
    return [*lab, "--log-level", "warning"]


def _worker_command(py: str, embedded: bool) -> list[str]:
    """The worker (`python -m worker`, as `fedgen-lab worker`) on both queues, quiet
    (`--embedded` for the embedded lab)."""
    lab = [py, "-m", "worker", "--queues", "cpu,gpu"]
    return [*lab, "--loglevel", "WARNING", "--quiet", *(["--embedded"] if embedded else [])]


def dashboard_command(py: str, app: str, host: str, port: int) -> list[str]:
    """`streamlit run` of the dashboard on host:port, headless, without usage stats, with the
    settings of the repository's .streamlit/config.toml (which Streamlit reads only when it is
    started in the repository root)."""
    where = ["--server.port", str(port), "--server.address", host, "--server.headless", "true"]
    quiet = ["--browser.gatherUsageStats", "false", "--client.toolbarMode", "minimal"]
    return [py, "-m", "streamlit", "run", app, *where, *quiet, "--runner.magicEnabled", "false"]


def dashboard_env(env: dict[str, str]) -> dict[str, str]:
    """The dashboard's environment: its Streamlit server (uvicorn) takes `X-Forwarded-For`
    only from FEDGEN_TRUSTED_PROXIES, as the API does (by default uvicorn believes it from
    127.0.0.1, and the browser's address is what the dashboard forwards to the API)."""
    return {**env, "FORWARDED_ALLOW_IPS": env.get("FEDGEN_TRUSTED_PROXIES", "")}


def run_up(
    host: str, port: int, dashboard_port: int, dashboard: bool, *, embedded: bool = False
) -> int:
    """Start everything and keep the worker and dashboard running until a signal or the API's
    exit; then stop everything. `embedded`: the settings are the embedded SQLite lab, which
    the worker of one host's `up` shares with its API. The exit code."""
    from worker.supervisor import supervise

    env = dict(os.environ, FEDGEN_AUTO_UPGRADE="0", FEDGEN_API_URL=f"http://{host}:{port}/api/v1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    specs = [
        (name, argv, dashboard_env(env) if name == "dashboard" else env)
        for name, argv in commands(host, port, dashboard_port, dashboard, embedded=embedded)
    ]
    return supervise(
        specs,
        label="up",
        critical=UP_CRITICAL,
        banner=f"API http://{host}:{port}/api/v1  docs http://{host}:{port}/docs",
    )


def _cmd_up(args: argparse.Namespace) -> int:
    from migrations.apply import upgrade

    s = get_settings()
    print_connections("up", s)
    s.ensure_dirs()
    upgrade(s.database_url)
    # The lab of one host: its worker uses the same (possibly embedded SQLite) lab as its API.
    return run_up(
        args.host,
        args.port,
        args.dashboard_port,
        not args.no_dashboard,
        embedded=bool(embedded_parts(s)),
    )


def api_url_problem(url: str) -> str | None:
    """Why `--api-url` cannot be the dashboard's API, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"--api-url: expected http(s)://host[:port][/api/v1], got {url!r}"
    if parts.query or parts.fragment or parts.username or parts.password:
        return f"--api-url: no query, fragment or credentials in the URL, got {url!r}"
    return None


def _cmd_dashboard(args: argparse.Namespace) -> int:
    """Replace this process with the dashboard's Streamlit server (signals reach it directly)."""
    env = dashboard_env(dict(os.environ))
    if args.api_url is not None:
        problem = api_url_problem(args.api_url)
        if problem:
            print(f"fedgen-lab dashboard: {problem}", file=sys.stderr)
            return 2
        env["FEDGEN_API_URL"] = args.api_url
    if not DASHBOARD_APP.exists():
        print(f"fedgen-lab dashboard: the app is missing ({DASHBOARD_APP})", file=sys.stderr)
        return 1
    api = env.get("FEDGEN_API_URL", "http://127.0.0.1:8000/api/v1 (the default)")
    token = "set: one member's dashboard" if env.get("FEDGEN_TOKEN") else "unset: members sign in"
    print(
        f"dashboard: http://{args.host}:{args.port}; API {api}; FEDGEN_TOKEN {token}",
        file=sys.stderr,
    )
    cmd = dashboard_command(sys.executable, str(DASHBOARD_APP), args.host, args.port)
    os.execve(cmd[0], cmd, env)
    return 0  # not reached


def serve_options() -> argparse.ArgumentParser:
    """Where the API listens (--host, --port): the parent parser of `api` and `up`."""
    serve = argparse.ArgumentParser(add_help=False)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    return serve


def add_api_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], serve: argparse.ArgumentParser
) -> None:
    """`fedgen-lab api`."""
    api = sub.add_parser("api", parents=[serve], help="serve the REST API")
    api.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    api.set_defaults(fn=_cmd_api)


def add_up_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], serve: argparse.ArgumentParser
) -> None:
    """`fedgen-lab up`."""
    up = sub.add_parser(
        "up",
        parents=[serve],
        help="API + worker (+ dashboard) together; a dead worker or dashboard is restarted; "
        "Ctrl-C stops all",
    )
    up.add_argument("--dashboard-port", type=int, default=8501)
    up.add_argument("--no-dashboard", action="store_true")
    up.set_defaults(fn=_cmd_up)


def add_dashboard_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fedgen-lab dashboard`."""
    dash = sub.add_parser(
        "dashboard", help="serve the dashboard (Streamlit) for a lab whose API runs elsewhere"
    )
    dash.add_argument("--host", default="127.0.0.1", help="address to listen on")
    dash.add_argument("--port", type=int, default=8501)
    dash.add_argument(
        "--api-url",
        default=None,
        help="the lab's API, e.g. http://api:8000/api/v1 (default: FEDGEN_API_URL, else "
        "http://127.0.0.1:8000/api/v1); the dashboard talks to no other",
    )
    dash.set_defaults(fn=_cmd_dashboard)
