"""The real API served by uvicorn on a loopback port (in a thread), for tests that talk to it
from outside over HTTP: members `alice` and `bob` and an `admin`, their tokens, a queued run of
alice's whose event stream stays open, and uvicorn's access log as it writes it (each line
captured after the loggers' filters, as its handler would print it)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from api.limits import Limits
from api.main import create_app
from lab.config import Settings
from lab.db import session_scope
from lab.models import User
from lab.repository import users as users_repo
from tests.support.dashboard_lab import free_port
from tests.support.factories import create_run


class _Lines(logging.Handler):
    """Collects each record's message (after the logger's filters)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@dataclass
class LiveApi:
    """A running API: its URL, app, users' tokens, alice's queued run, the access log."""

    url: str
    app: Any
    tokens: dict[str, str]
    run_id: str
    access_log: list[str] = field(default_factory=list)

    def headers(self, who: str) -> dict[str, str]:
        """The Authorization header of `who` (a name in `tokens`, or a raw token)."""
        return {"Authorization": f"Bearer {self.tokens.get(who, who)}"}

    def client(self) -> httpx.Client:
        """An httpx client on the API's /api/v1."""
        return httpx.Client(base_url=f"{self.url}/api/v1", timeout=30)

    def configure(self, **settings: Any) -> None:
        """Change settings, and start the rate limits afresh (each test its own budget)."""
        s: Settings = self.app.state.settings.model_copy(update=settings)
        self.app.state.settings = s
        self.app.state.limits = Limits(s.submit_rate, s.auth_fail_rate, s.webhook_test_rate)


@contextmanager
def live_api(home: Path) -> Iterator[LiveApi]:
    """Serve the API from a fresh SQLite lab under `home` with uvicorn's own logging (info, so
    the access log is written); stop it on exit."""
    settings = Settings(
        home=home, database_url=f"sqlite:///{home / 'lab.db'}", broker_url="memory://"
    )
    app = create_app(settings, enqueue=lambda *_: None, broker_check=lambda: None, sse_poll_s=0.05)
    port = free_port()
    # uvicorn configures its loggers here, after create_app: as `uvicorn --factory` would not,
    # so both orders are covered (fedgen-lab api configures first).
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="info"))
    access = logging.getLogger("uvicorn.access")
    lines = _Lines()
    access.addHandler(lines)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the API did not start")
            time.sleep(0.05)
        with session_scope(app.state.sessionmaker) as s:
            tokens = {
                name: users_repo.create_user(s, name, name == "admin")[1]
                for name in ("alice", "bob", "admin")
            }
        with session_scope(app.state.sessionmaker) as s:
            alice = s.query(User).filter_by(name="alice").one()
            run_id = str(create_run(s, alice, rounds=5).id)
        yield LiveApi(f"http://127.0.0.1:{port}", app, tokens, run_id, lines.lines)
    finally:
        access.removeHandler(lines)
        server.should_exit = True
        thread.join(timeout=15)
