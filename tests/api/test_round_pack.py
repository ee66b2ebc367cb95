"""The packed round formats (lab/round_pack.py) give back every value, refuse what they cannot
read, and stay small; the generator retention rule applied while a run writes keeps what the
footprint estimate counts (vocab.footprint.kept_checkpoint_rounds)."""

from __future__ import annotations

import random
import struct

import pytest

from fedgen.metric_names import METRICS
from lab.checkpoint_retention import generator_rounds_to_prune
from lab.round_pack import (
    METRIC_CODES,
    USER_FIELDS,
    PackError,
    pack_metrics,
    pack_users,
    unpack_metrics,
    unpack_users,
)
from vocab.footprint import KeepRule, checkpoint_rounds, kept_checkpoint_rounds, parse_keep_rule


def _random_float(rng: random.Random) -> float:
    kind = rng.randrange(4)
    if kind == 0:  # a float32 value, as torch gives them
        return float(struct.unpack("<f", struct.pack("<f", rng.uniform(-10, 10)))[0])
    if kind == 1:
        return rng.uniform(-1e6, 1e6)
    if kind == 2:
        return rng.choice([0.0, -0.0, 1e-310, 1e308, 1 / 3, 0.1])
    return float(rng.randrange(-(2**53), 2**53))


def test_metrics_round_trip_keys_order_and_values() -> None:
    rng = random.Random(7)
    keys = [*METRIC_CODES, "plugin_metric", "ünïcode", "x" * 300]
    for _ in range(200):
        chosen = rng.sample(keys, rng.randrange(len(keys) + 1))
        metrics = {k: _random_float(rng) for k in chosen}
        back = unpack_metrics(pack_metrics(metrics))
        assert list(back) == list(metrics)
        assert all(struct.pack("<d", back[k]) == struct.pack("<d", v) for k, v in metrics.items())


def test_metrics_refuse_what_is_not_a_number() -> None:
    with pytest.raises(TypeError, match="'lr'"):
        pack_metrics({"lr": "fast"})
    with pytest.raises(TypeError, match="'x'"):
        pack_metrics({"x": True})


def test_metric_codes_are_append_only() -> None:
    """A code names its key in every row stored since: the first ones never move and none
    repeats. A metric without one is stored by its name (a new metric needs no code)."""
    assert METRIC_CODES[:4] == ("test_acc", "test_loss", "user_acc_mean", "user_acc_min")
    assert len(set(METRIC_CODES)) == len(METRIC_CODES) <= 127
    new = {"some_new_metric": 0.25, **dict.fromkeys(METRICS, 1.0)}
    assert unpack_metrics(pack_metrics(new)) == new


def _user_rows(rng: random.Random, n: int, contiguous: bool) -> list[tuple[object, ...]]:
    ids = list(range(n)) if contiguous else sorted(rng.sample(range(10**6), n))
    rows: list[tuple[object, ...]] = []
    for u in ids:
        selected = rng.random() < 0.5
        rows.append(
            (
                u,
                _random_float(rng),
                _random_float(rng),
                rng.choice([0, 5, 300, 70_000, 2**40]),
                selected,
                _random_float(rng) if selected else None,
                _random_float(rng) if rng.random() < 0.9 else None,
            )
        )
    return rows


@pytest.mark.parametrize("contiguous", [True, False])
def test_users_round_trip(contiguous: bool) -> None:
    rng = random.Random(3)
    for n in (0, 1, 7, 8, 9, 20, 100):
        rows = _user_rows(rng, n, contiguous)
        back = unpack_users(pack_users(rows))
        got = [tuple(getattr(u, f) for f in USER_FIELDS) for u in back]
        assert len(got) == len(rows)
        for g, w in zip(got, rows, strict=True):
            assert g[0] == w[0]
            assert g[3:5] == w[3:5]
            for a, b in zip(g[1:3] + g[5:], w[1:3] + w[5:], strict=True):
                assert (a is None and b is None) or struct.pack("<d", a) == struct.pack("<d", b)


def test_users_of_a_real_round_are_small() -> None:
    """20 users with float32 figures (as the runner reports them), half selected: a header and
    about 17 bytes a user, against the ~150 of a row each."""
    f32 = struct.unpack("<f", struct.pack("<f", 0.3))[0]
    rows = [
        (u, f32, f32, 300, u % 2 == 0, 28.14967999995588 if u % 2 == 0 else None, None)
        for u in range(20)
    ]
    rows = [(*r[:6], f32 if r[4] else None) for r in rows]
    assert len(pack_users(rows)) <= 12 + 20 * 17


def test_a_cross_device_rounds_users_are_as_small_per_user() -> None:
    """100 trained users out of 10,000 (their ids are not 0..n-1): version 2 stores the ids in
    2 bytes each, not 8, so a row costs about what a user of a contiguous round costs."""
    f32 = struct.unpack("<f", struct.pack("<f", 0.3))[0]
    ids = sorted(random.Random(5).sample(range(10_000), 100))
    rows = [(u, f32, f32, 30, True, 28.5, f32) for u in ids]
    packed = pack_users(rows)
    assert packed[0] == 2
    contiguous = pack_users([(i, *r[1:]) for i, r in enumerate(rows)])
    assert len(packed) == len(contiguous) + 1 + 2 * 100
    assert [u.user for u in unpack_users(packed)] == ids
    # Version 1 with int64 ids (rows stored before version 2) is still read.
    v1 = bytearray(pack_users([(0, *r[1:]) for r in rows[:1]]))
    assert v1[0] == 1
    old = bytes([1]) + struct.pack("<I", 1) + b"\x00" + struct.pack("<q", 9_999) + bytes(v1[6:])
    assert [u.user for u in unpack_users(old)] == [9_999]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x09",
        b"\x01\x02",
        b"\x01\x00\x05\x00\x00\x00\x01",
        b"\x01\x7f\x00\x00\x00\x00",
        b"\x02\x05\x00\x01",  # five tags announced, one there
        b"\x02\x01\x00\x01\x00\x00\x00",  # a float64 announced, three bytes of it
        b"\x02\x01\x00\x00\x09\x00ab",  # a name of nine bytes, two there
    ],
)
def test_broken_bytes_are_refused(data: bytes) -> None:
    with pytest.raises(PackError):
        unpack_users(data)
    with pytest.raises(PackError):
        unpack_metrics(data)


def test_version_1_metrics_are_still_read() -> None:
    """The first layout (a tag, a name if uncoded, a value, one metric after the other)."""
    data = (
        bytes([1, 1])
        + struct.pack("<d", 0.0692)
        + bytes([0])
        + struct.pack("<H", 3)
        + b"abc"
        + struct.pack("<d", 1 / 3)
        + bytes([0x80 | 2])
        + struct.pack("<f", 1.5)
    )
    assert unpack_metrics(data) == {"test_acc": 0.0692, "abc": 1 / 3, "test_loss": 1.5}


def test_trailing_bytes_are_refused() -> None:
    with pytest.raises(PackError, match="after the last column"):
        unpack_users(pack_users([(0, 0.5, 0.5, 1, True, 1.0, 1.0)]) + b"\x00")
    with pytest.raises(PackError, match="bytes of values"):
        unpack_metrics(pack_metrics({"lr": 0.1}) + b"\x00")


@pytest.mark.parametrize("rule", ["every:10,last:3", "last:1", "every:7", "every:3,last:0", "all"])
@pytest.mark.parametrize(("rounds", "every"), [(100, 1), (95, 10), (10, 0), (50, 7)])
def test_online_pruning_keeps_what_the_estimate_counts(rule: str, rounds: int, every: int) -> None:
    """Pruning after each generator checkpoint a run writes leaves, at the end, the rounds
    vocab.footprint counts in the run's footprint."""
    keep: KeepRule = parse_keep_rule(rule)
    stored: set[int] = set()
    for r in checkpoint_rounds(rounds, every):
        stored.add(r)
        stored -= set(generator_rounds_to_prune(sorted(stored), keep))
    assert sorted(stored) == kept_checkpoint_rounds(rounds, every, keep)
