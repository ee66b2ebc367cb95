"""Secrets kept out of logs: a stream token (`?token=` of GET /runs/{id}/events, a credential a
browser's EventSource must put in the URL) is written as `token=***` in uvicorn's access log and
in every other log line of the loggers named in REDACTED_LOGGERS.

A logging.Filter on those loggers rewrites each record's message and arguments before any
handler formats them, however uvicorn is started (`fedgen-lab api`, `uvicorn --factory`, a
test's in-process server): `install` is called by `create_app`, after uvicorn has configured its
loggers (configuring them again keeps a logger's filters).
"""

from __future__ import annotations

import logging
import re

# Loggers that may write a request's URL: uvicorn's access and error logs, and httpx's request
# lines (the dashboard's and the tests' clients).
REDACTED_LOGGERS = ("uvicorn.access", "uvicorn.error", "httpx")
# `token=` as a query parameter: after `?` or `&` (also %-encoded `?`), up to the next `&`,
# space, quote or `#`.
_TOKEN_VALUE = re.compile(r"(?i)((?:[?&]|%3F|%26)token=)[^&\s\"'#]*")
REDACTED = "***"


def redact(text: str) -> str:
    """`text` with every `token=` query value replaced by ***."""
    return _TOKEN_VALUE.sub(rf"\g<1>{REDACTED}", text)


class RedactTokens(logging.Filter):
    """Rewrites `token=` query values in a record's message and string arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {
                k: redact(v) if isinstance(v, str) else v for k, v in record.args.items()
            }
        return True


def install() -> None:
    """Add the filter to each of REDACTED_LOGGERS (once: calling again adds nothing)."""
    for name in REDACTED_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactTokens) for f in logger.filters):
            logger.addFilter(RedactTokens())
