"""Screenshots of the Settings page (url path `settings`): three webhooks with deliveries that
were delivered, are being retried, and failed; and the form refusing a host that
FEDGEN_WEBHOOK_ALLOW does not allow.

Two receivers run on loopback (one answers 200, one 503) and a third URL is a closed port. A
sweep of three runs (one fails in round 2) runs through the worker's execute_run with the
scripted runner, and the workers' webhook sender (worker/webhook_sender.py) runs in this
process, so the deliveries are real POSTs.

Run: `.venv/bin/python -m scripts.screens.webhook_screenshots [OUT_DIR]` (about a minute, no
network; default OUT_DIR /tmp/shots).
"""

from __future__ import annotations

import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from tests.support.fakes import FakeRunner
from tests.support.stack import browser_page, lab_stack
from worker.claimed_run import execute_run
from worker.webhook_sender import start_webhook_sender

TINY = {
    "data": {"name": "synthetic", "synthetic_samples": 200},
    "partition": {"num_users": 3, "alpha": 0.1},
    "rounds": 4,
    "users_per_round": 2,
    "local_steps": 2,
}
ALLOW = "127.0.0.1"


@contextmanager
def receiver(code: int) -> Iterator[str]:
    """An HTTP server on loopback answering every POST with `code`; yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(code)
            self.end_headers()
            self.wfile.write(b"ok" if code == 200 else b"overloaded, try later")

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(what: str, check: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    raise TimeoutError(f"waited {timeout:.0f} s for {what}")


def main(out: Path) -> int:
    """Both screenshots into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    env = {"FEDGEN_WEBHOOK_ALLOW": ALLOW}
    with (
        tempfile.TemporaryDirectory() as tmp,
        receiver(200) as ok_url,
        receiver(503) as busy_url,
        lab_stack(Path(tmp) / "home", worker=False, env_extra=env) as stack,
    ):
        api = httpx.Client(
            base_url=stack.api_url + "/api/v1",
            headers={"Authorization": f"Bearer {stack.token}"},
            timeout=30,
        )

        def hook(url: str, events: list[str]) -> str:
            r = api.post("/webhooks", json={"url": url, "events": events})
            r.raise_for_status()
            return str(r.json()["id"])

        def log(hook_id: str) -> list[dict[str, Any]]:
            return list(api.get(f"/webhooks/{hook_id}/deliveries").json()["data"])

        slack = hook(
            f"{ok_url}/services/T000/B000/lab", ["run.failed", "run.succeeded", "sweep.finished"]
        )
        busy = hook(f"{busy_url}/alerts", ["run.failed"])
        down = hook(f"http://127.0.0.1:{closed_port()}/hook", ["sweep.finished"])
        sweep = {"name": "alerts-demo", "base": TINY, "grid": {"seed": [0, 1, 2]}}
        run_ids = api.post("/sweeps", json=sweep).raise_for_status().json()["run_ids"]

        settings = Settings(
            home=stack.home,
            webhook_allow=ALLOW,
            webhook_retries=3,
            webhook_backoff_s=5,
            webhook_poll_s=0.3,
        )
        factory = make_sessionmaker(make_engine(settings.database_url))
        for i, rid in enumerate(run_ids):
            runner = FakeRunner(fail_at=2) if i == 1 else FakeRunner()
            execute_run(rid, factory, runner=runner, settings=settings, worker_name="w1@lab")
        api.post(f"/webhooks/{slack}/test").raise_for_status()
        stop = start_webhook_sender(factory, settings)
        try:
            _wait(
                "the receiver-up deliveries",
                lambda: (
                    all(d["status"] == "delivered" for d in log(slack)) and len(log(slack)) == 5
                ),
            )
            _wait("the closed port's delivery to fail", lambda: log(down)[0]["status"] == "failed")
            _wait("the 503 delivery to fail", lambda: log(busy)[0]["status"] == "failed")
            api.post(f"/webhooks/{busy}/test").raise_for_status()
            _wait("the 503 test to be retried", lambda: log(busy)[0]["attempts"] >= 1)
            with browser_page(Path(tmp) / "profile", 1500, 1800) as page:
                page.goto(f"{stack.dashboard_url}/?page=settings")  # type: ignore[attr-defined]
                page.locator('[data-testid="stDataFrame"]').nth(2).wait_for(timeout=60_000)  # type: ignore[attr-defined]
                page.wait_for_timeout(2000)  # type: ignore[attr-defined]
                page.screenshot(path=str(out / "alerts.png"), full_page=True)  # type: ignore[attr-defined]
                page.get_by_role("textbox", name="URL", exact=True).fill(
                    "https://evil.example/hook"
                )  # type: ignore[attr-defined]
                page.get_by_role("button", name="Add webhook").click()  # type: ignore[attr-defined]
                page.get_by_text("not allowed by FEDGEN_WEBHOOK_ALLOW").wait_for(timeout=30_000)  # type: ignore[attr-defined]
                page.wait_for_timeout(1000)  # type: ignore[attr-defined]
                page.screenshot(path=str(out / "alerts-refused.png"))  # type: ignore[attr-defined]
        finally:
            stop.set()
            api.close()
    sys.stdout.write(f"wrote {out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/shots")))
