"""The client's exceptions: every failed request is a `LabError` whose message a person can read,
with the HTTP status, the API's raw `detail` and, for a rejected body, `fields`: dotted field ->
the API's message for it (`partition.alpha` -> "must be > 0")."""

from __future__ import annotations

from typing import Any


def error_fields(detail: Any) -> dict[str, str]:
    """A 422 `detail` list as dotted field -> message (the first message per field).

    The API names fields relative to the request body (`spec.partition.alpha`) and repeats the
    field in front of its message; both are trimmed. A plain-text detail is `{"(root)": text}`.
    """
    if isinstance(detail, str):
        return {"(root)": detail}
    out: dict[str, str] = {}
    if not isinstance(detail, list):
        return out
    for item in detail:
        if not isinstance(item, dict):
            continue
        raw = item.get("field")
        if not raw:
            loc = [str(p) for p in item.get("loc", []) if p != "body"]
            raw = ".".join(loc) or "(root)"
        raw = str(raw)
        msg = str(item.get("msg", "invalid value"))
        if msg.startswith(f"{raw}: "):
            msg = msg[len(raw) + 2 :]
        name = raw[len("spec.") :] if raw.startswith("spec.") else raw
        if name in ("spec", "(body)", "body"):
            name = "(root)"
        out.setdefault(name, msg)
    return out


def describe(detail: Any) -> str:
    """The detail in one line: `field: message; field: message`, or as the server said it."""
    if isinstance(detail, str):
        return detail
    fields = error_fields(detail)
    if fields:
        return "; ".join(f"{k}: {v}" for k, v in fields.items())
    return str(detail)


class LabError(Exception):
    """A request that did not succeed; `message` is meant for the user, `fields` names the
    rejected fields of a 400/422 (dotted field -> message)."""

    def __init__(self, message: str, status: int | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.detail = detail
        self.fields: dict[str, str] = error_fields(detail) if status in (400, 422) else {}


class LabUnreachable(LabError):
    """The server could not be reached at all (refused, DNS, timeout)."""


class LabAuthError(LabError):
    """The server rejected the token (401) or the action (403)."""


class LabNotFound(LabError):
    """The resource does not exist (404)."""


class LabValidationError(LabError):
    """The server rejected the request's body or parameters (400, 422): see `fields`."""


class LabBusy(LabError):
    """The server stayed unavailable (503) or kept rate-limiting (429) through every retry."""


class RunFailed(LabError):
    """`Run.wait()` saw the run end in another state than succeeded (`run` is its last state)."""

    def __init__(self, message: str, run: Any = None) -> None:
        super().__init__(message)
        self.run = run
