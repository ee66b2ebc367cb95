"""Times for people: how long ago or how soon, a wall-clock time in the viewer's zone,
durations, ISO-8601 UTC for files; DASH where there is no value. No Streamlit.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DASH = "—"


def zone(name: str | None) -> tzinfo:
    """The viewer's time zone by IANA name; UTC when unknown."""
    try:
        return ZoneInfo(name) if name else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def parse_ts(value: datetime | str | None) -> datetime | None:
    """An API timestamp (ISO 8601; naive means UTC) as an aware datetime, or None."""
    if not value:
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def duration(seconds: float | None) -> str:
    """`42 s`, `3 min 05 s`, `2 h 07 min`, `3 d 4 h`; a dash for None."""
    if seconds is None or seconds != seconds:
        return DASH
    s = max(int(round(seconds)), 0)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def relative(dt: datetime, now: datetime) -> str:
    """`just now`, `42 s ago`, `5 min ago`, `in 3 h 02 min`, `2 d 4 h ago`."""
    delta = (dt - now).total_seconds()
    s = abs(int(round(delta)))
    if s < 5:
        return "just now"
    if s < 60:
        text = f"{s} s"
    elif s < 3600:
        text = f"{s // 60} min"
    else:
        text = duration(s)
    return f"in {text}" if delta > 0 else f"{text} ago"


def local_time(dt: datetime, tz: tzinfo, now: datetime) -> str:
    """`14:03` today, `Nov 30 14:03` another day, `2025-11-30 14:03` another year."""
    loc, today = dt.astimezone(tz), now.astimezone(tz)
    if loc.date() == today.date():
        return loc.strftime("%H:%M")
    if loc.year == today.year:
        return loc.strftime("%b %d %H:%M")
    return loc.strftime("%Y-%m-%d %H:%M")


def when(value: datetime | str | None, now: datetime, tz: tzinfo) -> str:
    """A timestamp for people: `5 min ago (14:03)`; a dash when missing."""
    dt = parse_ts(value)
    return DASH if dt is None else f"{relative(dt, now)} ({local_time(dt, tz, now)})"


def age(value: datetime | str | None, now: datetime) -> str:
    """How long ago: `5 min ago`; a dash when missing."""
    dt = parse_ts(value)
    return DASH if dt is None else relative(dt, now)


def iso_utc(value: datetime | str | None) -> str | None:
    """An API timestamp as ISO-8601 UTC (`2026-12-01T12:00:00Z`), None when missing."""
    dt = parse_ts(value)
    return None if dt is None else dt.astimezone(UTC).isoformat().replace("+00:00", "Z")
