"""Server-sent events read off a response's lines: (event name, JSON data) pairs, in order, until
the stream ends or a deadline passes between events. No HTTP and no Streamlit."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any


def collect(lines: Iterable[str], deadline: float, out: list[tuple[str, dict[str, Any]]]) -> None:
    """Append each complete event of `lines` to `out` (what arrived stays there when the reader
    times out mid-stream); stop at the first event boundary past `deadline` (time.monotonic)."""
    name, data = "message", ""
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line and data:
            try:
                out.append((name, json.loads(data)))
            except ValueError:
                pass  # a malformed event is skipped, not fatal to the page
            name, data = "message", ""
        if time.monotonic() > deadline and not data:
            return
