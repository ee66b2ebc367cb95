"""A run's or a sweep's tags and note: the PATCH body, their limits, and how responses read them."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from vocab.schemas.base import In

# A tag and a note as the spec takes them (fedgen.spec.ExperimentSpec.tags / .note).
Tag = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^\x00]*$")]

MAX_TAGS = 32

MAX_NOTE = 10_000


class AnnotationsUpdate(In):
    """PATCH /runs/{id}, PATCH /sweeps/{id}: new tags and/or note (what is left out is kept).

    `tags` replaces the whole list (each tag once; a comma becomes a space). Owner or admin.
    A body with neither changes nothing (and records no editor).
    """

    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS, description="At most 32 tags.")
    note: str | None = Field(None, max_length=MAX_NOTE, pattern=r"^[^\x00]*$")


def _tag_list(value: Any) -> Any:
    # Read from the stored ',a,b,' (tags_csv) or given as a list.
    if isinstance(value, str):
        return [t for t in value.split(",") if t]
    return [] if value is None else value


TagList = Annotated[list[str], BeforeValidator(_tag_list)]

ANNOTATED_BY = "The user who last changed the tags or note (null: never changed)."

ANNOTATED_AT = "When (the database's clock) they were last changed."
