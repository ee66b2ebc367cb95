"""The JSON bodies webhooks receive: the event, its subject, a link, the time, and a
Slack-compatible one-line `text` (a Slack incoming webhook shows it as the message).

Pure functions of the rows' values, so the text can be tested without a database.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from vocab.run_names import run_label
from vocab.run_status import RunStatus, stopped_at

PRODUCT = "FedGen Lab"
MAX_ERROR_CHARS = 300  # of the error's first line, in `text` and `run.error`


def _first_line(error: str | None) -> str | None:
    if not error or not error.strip():
        return None
    line = error.strip().splitlines()[0]
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 1] + "…"


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def run_payload(
    *,
    event: str,
    run_id: str,
    spec: dict[str, Any],
    status: str,
    owner: str,
    sweep_id: str | None,
    current_round: int,
    rounds: int,
    last_acc: float | None,
    best_acc: float | None,
    error: str | None,
    finished_at: datetime | None,
) -> dict[str, Any]:
    """run.failed / run.succeeded: which run, how far it got, its final accuracy or its error."""
    label = run_label(spec)
    err = _first_line(error)
    final = _finite(last_acc)
    if status == RunStatus.FAILED:
        text = f"{PRODUCT}: run {label} failed {stopped_at(current_round, rounds)}"
        text += f": {err}" if err else ""
    else:
        acc = f", final accuracy {final * 100:.2f}%" if final is not None else ""
        text = f"{PRODUCT}: run {label} {status} after {rounds} rounds{acc}"
    return {
        "event": event,
        "text": text,
        "run": {
            "id": run_id,
            "label": label,
            "status": status,
            "owner": owner,
            "sweep_id": sweep_id,
            "algorithm": (spec.get("algorithm") or {}).get("name"),
            "dataset": (spec.get("data") or {}).get("name"),
            "rounds": rounds,
            "current_round": current_round,
            "final_acc": final,
            "best_acc": _finite(best_acc),
            "error": err,
        },
        "link": f"/?page=live&run={run_id}",
        "api": f"/api/v1/runs/{run_id}",
        "time": finished_at.isoformat() if finished_at else None,
    }


def sweep_payload(
    *,
    event: str,
    sweep_id: str,
    name: str,
    owner: str,
    counts: dict[str, int],
    study: tuple[str, int] | None,
    time: datetime,
) -> dict[str, Any]:
    """sweep.finished / study.finished: every run of the sweep has ended; how many each way."""
    tally = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no runs"
    if event == "study.finished" and study is not None:
        what = f"study {study[0]} v{study[1]} (sweep {name})"
    else:
        what = f"sweep {name}"
    return {
        "event": event,
        "text": f"{PRODUCT}: {what} finished: {tally}",
        "sweep": {
            "id": sweep_id,
            "name": name,
            "owner": owner,
            "status_counts": dict(sorted(counts.items())),
            "runs": sum(counts.values()),
            "study": {"name": study[0], "version": study[1]} if study else None,
        },
        "link": f"/?page=compare&sweep={sweep_id}",
        "api": f"/api/v1/sweeps/{sweep_id}",
        "time": time.isoformat(),
    }


def with_public_url(payload: dict[str, Any], public_url: str) -> dict[str, Any]:
    """`payload` with its `link` and `api` made absolute under FEDGEN_PUBLIC_URL (the lab's
    address as members reach it), so a chat message has something to click; unchanged when
    no public URL is set."""
    base = public_url.rstrip("/")
    if not base:
        return payload
    out = dict(payload)
    for key in ("link", "api"):
        if isinstance(out.get(key), str) and out[key].startswith("/"):
            out[key] = base + out[key]
    if isinstance(out.get("link"), str) and isinstance(out.get("text"), str):
        out["text"] = f"{out['text']} {out['link']}"  # chat apps turn a bare URL into a link
    return out


def ping_payload(*, webhook_id: str, owner: str, url: str, time: datetime) -> dict[str, Any]:
    """The "send test" body: says which hook it is, nothing else happened."""
    return {
        "event": "test",
        "text": f"{PRODUCT}: test delivery to {url} (webhook {webhook_id[:8]} of {owner})",
        "webhook": {"id": webhook_id, "owner": owner, "url": url},
        "time": time.isoformat(),
    }
