"""The building blocks of the API's bodies: ids as strings, ISO 8601 date-times only, response
models read from ORM rows, request models that refuse unknown fields and strict responses built
from dicts (a key that drifts from the model fails loudly instead of being dropped)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict


def _as_str(value: Any) -> Any:
    return None if value is None else str(value)


# A query string the database stores or compares: PostgreSQL text cannot hold NUL.
NO_NUL = r"^[^\x00]*$"

# Ids are UUIDs in the database and strings in the API.
IdStr = Annotated[str, BeforeValidator(_as_str)]

OptionalIdStr = Annotated[str | None, BeforeValidator(_as_str)]


def _iso_datetime(value: Any) -> Any:
    # pydantic reads numbers (and numeric strings) as Unix times; the API takes ISO 8601 only.
    if isinstance(value, str) and not value.strip().lstrip("+-").replace(".", "", 1).isdigit():
        return value
    if isinstance(value, datetime):
        return value
    raise ValueError("expected an ISO 8601 date-time, e.g. 2026-01-31T12:00:00Z")


IsoDatetime = Annotated[datetime, BeforeValidator(_iso_datetime)]


class FromRow(BaseModel):
    """A response read from an ORM row's attributes (`Model.model_validate(row)`)."""

    model_config = ConfigDict(from_attributes=True)


class In(BaseModel):
    """A request body: an unknown field is a 422, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


class Strict(BaseModel):
    """A response built from a dict: a key the model lacks is an error, not dropped."""

    model_config = ConfigDict(extra="forbid")
