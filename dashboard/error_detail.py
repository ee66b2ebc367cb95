"""The API's error `detail` read for people: a 422's list of field errors as dotted spec
field -> message, or any detail as one sentence."""

from __future__ import annotations

from typing import Any


def error_fields(detail: Any) -> dict[str, str]:
    """Map a 422 `detail` list to dotted spec field -> message (first message per field).

    The API names fields relative to the request body (`spec.partition.alpha`) and
    repeats the field in front of the message; both are trimmed here.
    """
    out: dict[str, str] = {}
    if isinstance(detail, str):
        return {"(root)": detail}
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
