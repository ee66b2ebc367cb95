"""Typed views of a run's free-form dicts (vocab.schemas.runs.RunPublic): `summary`, the
end-of-run summary (docs/metrics.md; written by fedgen.events.RunSummary.to_dict, or by a
pushed result), and `versions`, whose `numerics_changed` lists the numerics that changed on
a resume (lab.repository.runs.record_start). The API keeps both as dicts; the dashboard reads
the keys it shows as attributes, every key optional and any other key kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator


class RunSummaryView(BaseModel):
    """RunPublic.summary: accuracies as fractions, each None where the summary lacks it."""

    model_config = ConfigDict(frozen=True, extra="allow")

    final_acc: float | None = None
    final_round: int | None = None
    best_acc: float | None = None
    best_round: int | None = None
    top5_mean: float | None = None
    top5_std: float | None = None
    value: float | None = None
    rounds_done: int | None = None
    wall_s: float | None = None

    @classmethod
    def of(cls, summary: Mapping[str, Any] | None) -> RunSummaryView:
        """The run's summary (an empty one until it has one)."""
        return cls.model_validate(dict(summary or {}))


class NumericsChange(BaseModel):
    """One resume whose numerics changed: its `round` and, for each numeric that changed
    (torch_threads, ...), [before, after] as extra keys."""

    model_config = ConfigDict(frozen=True, extra="allow")

    round: int | None = None

    def changed(self) -> dict[str, Any]:
        """{numeric: [before, after]}: every key but `round`."""
        return dict(self.model_extra or {})


class RunVersionsView(BaseModel):
    """RunPublic.versions: the versions a run ran with; what the dashboard reads of them."""

    model_config = ConfigDict(frozen=True, extra="allow")

    numerics_changed: list[NumericsChange] = []

    @field_validator("numerics_changed", mode="before")
    @classmethod
    def _changes_only(cls, value: Any) -> list[Any]:
        """None -> []; an entry that is not an object is left out (as it always was)."""
        return [c for c in value or [] if isinstance(c, Mapping)]

    @classmethod
    def of(cls, versions: Mapping[str, Any] | None) -> RunVersionsView:
        """The run's versions (empty when it has none)."""
        return cls.model_validate(dict(versions or {}))
