"""The packed forms of a round's figures: its metrics, and all its users' figures in one value.

A round used to be one JSON object (~550 bytes for FedGen) plus one row per user (~150 bytes
each, index included): 3.5 KB a round for 20 users. Packed, both are lossless and about a fifth
of that (lab.models: RoundMetrics.metrics, RoundUsers.data; bench/storage_per_round.py measures).

Metrics, version 2 (what is written): a version byte, the number of metrics (uint16), a tag byte
per metric in the dict's order, the names of those without a code (uint16 length and UTF-8 each),
then the values (little-endian). A tag's low 7 bits are the key's code in METRIC_CODES (1-based),
or 0 when the key has no code; its high bit says the value is a float32 (chosen only when the
float32 reads back equal: most losses and accuracies come out of torch as float32 values), else
a float64. The rounds of a run share their header (everything before the values), so a read
parses each header once and then unpacks a row's values with one struct call: a 100-run Compare
reads 20,000 rounds. Version 1 (the first rows of migration 0010: a tag and its value after the
other) is still read.

Users, version 1: a version byte, the user count (uint32), a flags byte (bit 0: the users are
0..n-1 in order; else their ids follow as int64), then one column per field of USER_FIELDS[1:] in
that order: a descriptor byte (its low 7 bits the element type: 'f' float32, 'd' float64, 'b' /
'h' / 'i' / 'q' signed ints of 1/2/4/8 bytes, '?' bits; the high bit: a presence bitmap of the n
users follows and only present values are stored), then the values. Floats take float32 only
when every value of the column reads back equal; ints the narrowest type that holds them all.

Users, version 2 (written when the users are not 0..n-1: a cross-device round's trained users
out of up to 10,000): as version 1, but the ids are a typed column (a type byte, then each id in
the narrowest signed int that holds them all: 2 bytes up to 32,767 users) instead of int64.
The users 0..n-1 in order are still written as version 1 (the same bytes as before).

Both decoders check lengths and refuse what they do not know (PackError): stored data is never
guessed at.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import fields
from functools import lru_cache
from typing import Any

from fedgen.events import UserRoundMetrics

METRICS_VERSION = 2
USERS_VERSION = 2

# Codes of the metric keys stored by number instead of by name. APPEND ONLY: a code, once
# released, names its key in every packed row stored since (a test pins the order).
METRIC_CODES: tuple[str, ...] = (
    "test_acc",
    "test_loss",
    "user_acc_mean",
    "user_acc_min",
    "train_loss",
    "lr",
    "bytes_down",
    "bytes_up",
    "time_train_ms",
    "time_user_ms",
    "time_server_ms",
    "time_eval_ms",
    "time_total_ms",
    "gen_teacher_loss",
    "gen_diversity_loss",
    "gen_ensemble_acc",
    "gen_train_ms",
    "distill_loss",
    "distill_steps_run",
    "distill_best_step",
    "val_acc_start",
    "val_acc_best",
)
_CODE_OF = {k: i + 1 for i, k in enumerate(METRIC_CODES)}
_F32 = 0x80

# The per-user fields, in the order version 1 stores them (after the user ids), and their kind.
# APPEND ONLY as well: a new field is a new version of the format.
USER_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(UserRoundMetrics))
USERS_V1: tuple[tuple[str, str], ...] = (
    ("test_acc", "float"),
    ("test_loss", "float"),
    ("num_test", "int"),
    ("selected", "bool"),
    ("train_ms", "float"),
    ("train_loss", "float"),
)
_HAS_NULLS = 0x80
_CONTIGUOUS = 0x01
_INT_TYPES = (("b", 1 << 7), ("h", 1 << 15), ("i", 1 << 31), ("q", 1 << 63))


class PackError(ValueError):
    """Packed figures that cannot be read: unknown version, short or trailing bytes."""


def _fits_f32(v: float) -> bool:
    try:
        return bool(struct.unpack("<f", struct.pack("<f", v))[0] == v)
    except OverflowError:
        return False


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"metric {key!r}: {value!r} is not a number")
    return float(value)


def pack_metrics(metrics: Mapping[str, Any]) -> bytes:
    """A round's metrics (str -> number) as bytes; `unpack_metrics` gives them back equal."""
    if len(metrics) > 0xFFFF:
        raise ValueError(f"{len(metrics)} metrics in a round: at most 65535")
    tags, names, values, fmt = bytearray(), bytearray(), [], "<"
    for key, raw in metrics.items():
        value = _number(key, raw)
        f32 = _F32 if _fits_f32(value) else 0
        code = _CODE_OF.get(key, 0)
        tags.append(code | f32)
        if not code:
            name = key.encode()
            if len(name) > 0xFFFF:
                raise ValueError(f"metric key of {len(name)} bytes: at most 65535")
            names += struct.pack("<H", len(name)) + name
        values.append(value)
        fmt += "f" if f32 else "d"
    head = bytes([METRICS_VERSION]) + struct.pack("<H", len(tags)) + tags + names
    return head + struct.pack(fmt, *values)


@lru_cache(maxsize=1024)
def _layout(head: bytes) -> tuple[tuple[str, ...], struct.Struct]:
    """The keys and the values' Struct of a version 2 header (cached: a run's rounds share it)."""
    (n,) = struct.unpack_from("<H", head, 1)
    tags, pos = head[3 : 3 + n], 3 + n
    keys, fmt = [], "<"
    for tag in tags:
        code = tag & ~_F32
        if code:
            if code > len(METRIC_CODES):
                raise PackError(f"packed metrics: unknown key code {code}")
            keys.append(METRIC_CODES[code - 1])
        else:
            (size,) = struct.unpack_from("<H", head, pos)
            keys.append(head[pos + 2 : pos + 2 + size].decode())
            pos += 2 + size
        fmt += "f" if tag & _F32 else "d"
    return tuple(keys), struct.Struct(fmt)


def _head_end(data: bytes) -> int:
    """Where a version 2 header ends (the names of uncoded keys are walked, if any)."""
    (n,) = struct.unpack_from("<H", data, 1)
    end = 3 + int(n)
    tags = data[3:end]
    if len(tags) != n:
        raise PackError("packed metrics: tags cut short")
    if b"\x00" in tags or b"\x80" in tags:  # a key without a code: its name follows
        for tag in tags:
            if not tag & ~_F32:
                (size,) = struct.unpack_from("<H", data, end)
                end += 2 + int(size)
    return end


def unpack_metrics(data: bytes) -> dict[str, float]:
    """The metrics `pack_metrics` packed, in their order."""
    data = bytes(data)
    if data[:1] == b"\x01":
        return _unpack_metrics_v1(memoryview(data))
    if data[:1] != bytes([METRICS_VERSION]):
        raise PackError(f"packed metrics: unknown version {data[0] if data else None}")
    try:
        end = _head_end(data)
        keys, values = _layout(data[:end])
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise PackError(f"packed metrics: header cut short ({exc})") from None
    if len(data) - end != values.size:
        raise PackError(f"packed metrics: {len(data) - end} bytes of values, not {values.size}")
    return dict(zip(keys, values.unpack_from(data, end), strict=True))


def _unpack_metrics_v1(view: memoryview) -> dict[str, float]:
    """Version 1: a tag, its name if uncoded, and its value, one metric after the other."""
    out: dict[str, float] = {}
    pos = 1
    try:
        while pos < len(view):
            tag = view[pos]
            pos += 1
            code = tag & ~_F32
            if code:
                if code > len(METRIC_CODES):
                    raise PackError(f"packed metrics: unknown key code {code}")
                key = METRIC_CODES[code - 1]
            else:
                (n,) = struct.unpack_from("<H", view, pos)
                key = bytes(view[pos + 2 : pos + 2 + n]).decode()
                if len(key.encode()) != n:
                    raise PackError("packed metrics: key cut short")
                pos += 2 + n
            fmt = "<f" if tag & _F32 else "<d"
            (out[key],) = struct.unpack_from(fmt, view, pos)
            pos += struct.calcsize(fmt)
    except struct.error as exc:
        raise PackError(f"packed metrics: cut short ({exc})") from None
    return out


def _bits(flags: Sequence[bool]) -> bytes:
    out = bytearray((len(flags) + 7) // 8)
    for i, f in enumerate(flags):
        if f:
            out[i >> 3] |= 1 << (i & 7)
    return bytes(out)


def _unbits(view: memoryview, pos: int, n: int) -> list[bool]:
    size = (n + 7) // 8
    if pos + size > len(view):
        raise PackError("packed users: bitmap cut short")
    return [bool(view[pos + (i >> 3)] >> (i & 7) & 1) for i in range(n)]


def _int_type(values: Sequence[int]) -> str:
    lo, hi = min(values, default=0), max(values, default=0)
    for code, bound in _INT_TYPES:
        if -bound <= lo and hi < bound:
            return code
    raise ValueError(f"per-user integer {hi if hi >= 0 else lo} does not fit 64 bits")


def _column(kind: str, name: str, values: list[Any]) -> bytes:
    present = [v is not None for v in values]
    stored = [v for v in values if v is not None]
    if kind == "bool":
        code, body = "?", _bits([bool(v) for v in stored])
    elif kind == "int":
        ints = [_as_int(name, v) for v in stored]
        code = _int_type(ints)
        body = struct.pack(f"<{len(ints)}{code}", *ints)
    else:
        floats = [_number(name, v) for v in stored]
        code = "f" if all(_fits_f32(v) for v in floats) else "d"
        body = struct.pack(f"<{len(floats)}{code}", *floats)
    head = bytes([ord(code) | (_HAS_NULLS if not all(present) else 0)])
    return head + (_bits(present) if not all(present) else b"") + body


def _as_int(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise TypeError(f"per-user {name}: {v!r} is not a whole number")
    return v


def pack_users(rows: Sequence[Sequence[Any]]) -> bytes:
    """A round's per-user figures, each row the values of USER_FIELDS in order, as bytes."""
    n = len(rows)
    users = [_as_int("user", r[0]) for r in rows]
    contiguous = users == list(range(n))
    out = bytearray([1 if contiguous else USERS_VERSION]) + struct.pack("<I", n)
    if contiguous:
        out.append(_CONTIGUOUS)
    else:  # version 2: the ids in their narrowest type
        code = _int_type(users)
        out.append(0)
        out += bytes([ord(code)]) + struct.pack(f"<{n}{code}", *users)
    index = {name: i for i, name in enumerate(USER_FIELDS)}
    for name, kind in USERS_V1:
        out += _column(kind, name, [r[index[name]] for r in rows])
    return bytes(out)


def unpack_users(data: bytes) -> list[UserRoundMetrics]:
    """The users `pack_users` packed, in their order."""
    view = memoryview(data)
    if not view or view[0] not in (1, USERS_VERSION):
        raise PackError(f"packed users: unknown version {view[0] if view else None}")
    version = view[0]
    try:
        (n,) = struct.unpack_from("<I", view, 1)
        flags, pos = view[5], 6
        if flags & _CONTIGUOUS:
            users: list[int] = list(range(n))
        elif version == 1:
            users = list(struct.unpack_from(f"<{n}q", view, pos))
            pos += 8 * n
        else:
            code = chr(view[pos])
            if code not in "bhiq":
                raise PackError(f"packed users: unknown id type {code!r}")
            users = list(struct.unpack_from(f"<{n}{code}", view, pos + 1))
            pos += 1 + struct.calcsize(f"<{n}{code}")
        columns: dict[str, list[Any]] = {}
        for name, _kind in USERS_V1:
            head = view[pos]
            pos += 1
            code = chr(head & ~_HAS_NULLS)
            present = [True] * n
            if head & _HAS_NULLS:
                present = _unbits(view, pos, n)
                pos += (n + 7) // 8
            count = sum(present)
            if code == "?":
                stored: list[Any] = _unbits(view, pos, count)
                pos += (count + 7) // 8
            elif code in "fdbhiq":
                stored = list(struct.unpack_from(f"<{count}{code}", view, pos))
                pos += struct.calcsize(f"<{count}{code}")
            else:
                raise PackError(f"packed users: unknown column type {code!r} of {name}")
            it = iter(stored)
            columns[name] = [next(it) if p else None for p in present]
    except (struct.error, IndexError) as exc:
        raise PackError(f"packed users: cut short ({exc})") from None
    if pos != len(view):
        raise PackError(f"packed users: {len(view) - pos} bytes after the last column")
    return [
        UserRoundMetrics(user=u, **{name: columns[name][i] for name, _ in USERS_V1})
        for i, u in enumerate(users)
    ]
