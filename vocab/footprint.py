"""What a run stores in the lab: its footprint, estimated from the spec at submission.

A run's whole footprint (`footprint_estimate`, what FEDGEN_QUOTA_BYTES is checked against at
submission) adds the full checkpoints kept (each `fedgen.sizes.estimate_checkpoint_bytes`), the
generator checkpoints kept under the retention rule (`KeepRule`, parsed from
FEDGEN_KEEP_GENERATOR_CHECKPOINTS by `parse_keep_rule`; the rounds it keeps:
`kept_checkpoint_rounds`), the final model and every round's rows (`round_bytes`: what a stored
round takes in the database). Each run's `stored_bytes` counts its rounds with the same figures.
Arithmetic on the spec: no torch, no database.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedgen.sizes import (
    FULL_USER_ROWS,
    Tensors,
    checkpoint_estimate,
    estimate_checkpoint_bytes,
    generator_shapes,
    spec_model_shape,
)
from fedgen.spec import ExperimentSpec

# What a stored round costs outside its checkpoints (its packed round_metrics row and its one
# round_users row, indexes included: lab/round_pack.py), rounded up from what
# bench/storage_per_round.py measured on PostgreSQL (growth between a 10-round and a longer run)
# for real FedGen runs on Fashion-MNIST, half the users a round: 647 and 733 bytes a round with
# 20 users (two sittings: pages and index splits fall differently), 1,170 with 50, so ~17.4 a
# user over 300-400. (Before migration 0010, a JSON object a round and a row per user: 3,474
# bytes with 20 users, 474 + 150 a user.) The footprint estimate and each run's `stored_bytes`
# both count rounds with these, erring above.
ROUND_BYTES_BASE = 400
ROUND_BYTES_PER_USER = 18

# A generator or final-model checkpoint: torch.save's archive around the tensors, the
# generator's config or the spec's JSON, and the round.
SMALL_CHECKPOINT_OVERHEAD = 2048


def user_rows(spec: ExperimentSpec) -> int:
    """Per-user rows one stored round holds: every user's, or above `FULL_USER_ROWS` users the
    round's trained users' (`fedgen.runner.Simulation._event`)."""
    users = spec.partition.num_users
    return users if users <= FULL_USER_ROWS else spec.users_per_round


def round_bytes(num_users: int) -> int:
    """Bytes one stored round of a run with `num_users` users takes, checkpoints left out."""
    return ROUND_BYTES_BASE + ROUND_BYTES_PER_USER * max(num_users, 0)


@dataclass(frozen=True)
class KeepRule:
    """Which of a run's generator checkpoints are kept (FEDGEN_KEEP_GENERATOR_CHECKPOINTS).

    `every`: those at rounds that are multiples of it; `last`: the newest this many; the final
    round's is always kept. Neither set: all are kept (what the lab did before retention).
    """

    every: int | None = None
    last: int | None = None

    @property
    def keeps_all(self) -> bool:
        return self.every is None and self.last is None


KEEP_ALL = KeepRule()
MAX_KEEP = 10_000  # every:N and last:K are at most this (a run has at most 10,000 rounds)


def parse_keep_rule(text: str) -> KeepRule:
    """'every:10,last:3', 'last:5', 'every:25' or 'all' -> KeepRule; a ValueError names the
    part that is wrong and what is allowed."""
    text = text.strip()
    if text == "all":
        return KEEP_ALL
    found: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        key, sep, value = part.partition(":")
        if not sep or key not in ("every", "last") or key in found:
            raise ValueError(
                f"{part!r}: expected 'all' or 'every:N' and/or 'last:K', comma-separated, each once"
            )
        try:
            n = int(value)
        except ValueError:
            raise ValueError(f"{part!r}: {value!r} is not a whole number") from None
        low = 1 if key == "every" else 0
        if not low <= n <= MAX_KEEP:
            raise ValueError(f"{part!r}: {key} must be between {low} and {MAX_KEEP}")
        found[key] = n
    return KeepRule(every=found.get("every"), last=found.get("last"))


def checkpoint_rounds(rounds: int, every: int) -> list[int]:
    """Rounds at which a run writes its full (and generator) checkpoints: each multiple of
    `checkpoint_every` after round 0, and the last round (`fedgen.runner.checkpoints_for`)."""
    out = list(range(every, rounds, every)) if every > 0 else []
    return [*out, rounds]


def kept_checkpoint_rounds(rounds: int, every: int, rule: KeepRule | str) -> list[int]:
    """The rounds whose generator checkpoints a finished run still has under `rule` (a
    KeepRule or its text): of `checkpoint_rounds(rounds, every)`, the multiples of rule.every,
    the newest rule.last and the final one."""
    rule = parse_keep_rule(rule) if isinstance(rule, str) else rule
    written = checkpoint_rounds(rounds, every)
    if rule.keeps_all:
        return written
    newest = set(written[len(written) - rule.last :]) if rule.last else set()
    step = rule.every
    return [
        r for r in written if r == rounds or r in newest or (step is not None and r % step == 0)
    ]


@dataclass(frozen=True)
class Footprint:
    """Estimated bytes a finished run stores, by part (what its owner's usage grows by)."""

    full: int  # the full (resume) checkpoints kept (FEDGEN_KEEP_FULL_CHECKPOINTS)
    generator: int  # FedGen's generator checkpoints kept under the retention rule
    model: int  # the final model
    rounds: int  # the per-round rows, rounds 0..R

    @property
    def total(self) -> int:
        return self.full + self.generator + self.model + self.rounds


def generator_checkpoint_bytes(spec: ExperimentSpec) -> int:
    """Estimated size of one of the spec's generator checkpoints (0 when it has none)."""
    shapes = generator_shapes(spec)
    if shapes is None:
        return 0
    tensors = Tensors()
    for part in shapes:
        tensors.extend(part)
    return tensors.serialized + SMALL_CHECKPOINT_OVERHEAD


def model_checkpoint_bytes(spec: ExperimentSpec) -> int:
    """Estimated size of the spec's final-model checkpoint (the global model and the spec)."""
    state = spec_model_shape(spec).state
    return state.serialized + len(spec.canonical_json()) + SMALL_CHECKPOINT_OVERHEAD


def footprint_estimate(
    spec: ExperimentSpec, keep_full: int, keep_generator: KeepRule | str = KEEP_ALL
) -> Footprint:
    """What `spec`'s run stores once finished: `keep_full` full checkpoints (at most as many
    as it writes), its generator checkpoints kept under `keep_generator`, the final model, and
    rounds 0..R of per-round rows. No torch: arithmetic on the spec (see the module docstring)."""
    written = checkpoint_rounds(spec.rounds, spec.checkpoint_every)
    generators = len(kept_checkpoint_rounds(spec.rounds, spec.checkpoint_every, keep_generator))
    return Footprint(
        full=min(keep_full, len(written)) * estimate_checkpoint_bytes(spec),
        generator=generators * generator_checkpoint_bytes(spec),
        model=model_checkpoint_bytes(spec),
        rounds=(spec.rounds + 1) * round_bytes(user_rows(spec)),
    )


def footprint_field(spec: ExperimentSpec, footprint: Footprint) -> str:
    """The spec field that makes the footprint large: `rounds` (per-round rows),
    `checkpoint_every` (generator checkpoints), or what drives the full checkpoint's size."""
    parts = {
        "rounds": footprint.rounds,
        "checkpoint_every": footprint.generator,
        "model.name": footprint.model,
        "full": footprint.full,
    }
    name = max(parts, key=lambda k: parts[k])
    if name == "full":
        return checkpoint_estimate(spec).driving_field() or "(root)"
    return name
