"""Which checkpoints a run keeps, and what it no longer has and why.

Full (resume) checkpoints: the newest FEDGEN_KEEP_FULL_CHECKPOINTS. Generator checkpoints:
FEDGEN_KEEP_GENERATOR_CHECKPOINTS (vocab.footprint.KeepRule): those at multiples of `every`, the
newest `last`, and always the newest one, which at the end of a run is the final round's (the
same rounds vocab.footprint.kept_checkpoint_rounds counts in a run's footprint). Final-model
checkpoints are all kept. Pruning happens in the transaction of the round whose checkpoint
made an older one superfluous (lab/repository/checkpoints.py).

What was pruned is not recorded row by row (a 10,000-round run would keep a list as long as its
rounds): it is what the spec says was written up to the run's current round and is not stored
any more, told with the rule that removes it (`pruned`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from vocab.footprint import KeepRule, checkpoint_rounds

# ExperimentSpec's defaults, for a stored spec that leaves them out.
DEFAULT_ROUNDS = 200
DEFAULT_CHECKPOINT_EVERY = 50


def generator_rounds_to_prune(present: Sequence[int], rule: KeepRule) -> list[int]:
    """Of the rounds whose generator checkpoints are stored, those `rule` no longer keeps."""
    if rule.keeps_all or not present:
        return []
    ordered = sorted(set(present))
    newest = set(ordered[-max(rule.last or 0, 1) :])
    step = rule.every
    return [r for r in ordered if r not in newest and not (step and r % step == 0)]


def describe_rule(rule: KeepRule) -> str:
    """'every 50th round, the newest 5 and the newest' style text of a rule."""
    parts = []
    if rule.every:
        parts.append(f"those at multiples of {rule.every}")
    if rule.last:
        parts.append(f"the newest {rule.last}")
    parts.append("the final one")
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


@dataclass(frozen=True)
class Pruned:
    """Checkpoints of one kind a run wrote and no longer has."""

    kind: str
    rounds: list[int]
    reason: str


def pruned(
    spec: dict[str, Any],
    current_round: int,
    stored: Iterable[tuple[int, str]],
    keep_full: int,
    rule: KeepRule,
    rule_text: str,
) -> list[Pruned]:
    """What the run wrote up to `current_round` (full checkpoints; generator ones when it stores
    any) and is no longer in `stored` ((round, kind) pairs), each kind with its reason."""
    rounds = int(spec.get("rounds", DEFAULT_ROUNDS))
    every = int(spec.get("checkpoint_every", DEFAULT_CHECKPOINT_EVERY))
    written = [r for r in checkpoint_rounds(rounds, every) if r <= current_round]
    by_kind: dict[str, set[int]] = {}
    for rnd, kind in stored:
        by_kind.setdefault(kind, set()).add(rnd)
    out: list[Pruned] = []
    full = [r for r in written if r not in by_kind.get("full", set())]
    if full and by_kind.get("full"):
        out.append(
            Pruned(
                "full",
                full,
                f"only the newest {keep_full} full checkpoints are kept "
                f"(FEDGEN_KEEP_FULL_CHECKPOINTS={keep_full})",
            )
        )
    # A run stores generator checkpoints only when its algorithm writes them (FedGen); it always
    # has its newest, so a run with none never wrote any.
    gens = by_kind.get("generator", set())
    gone = [r for r in written if r not in gens]
    if gens and gone:
        out.append(
            Pruned(
                "generator",
                gone,
                f"generator checkpoints kept: {describe_rule(rule)} "
                f"(FEDGEN_KEEP_GENERATOR_CHECKPOINTS={rule_text})",
            )
        )
    return out
