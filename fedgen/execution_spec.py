"""The spec's `execution` and `batch_clients` fields: how a round's local updates are computed.

`execution`:
- `sequential`: one selected client after another (the only execution before batching came).
- `batched`: the selected clients' local updates as one computation, their models stacked
  (`fedgen.batched`); equal to `sequential` within float tolerance, not bit for bit.
- `auto`: `batched` where it is faster (a GPU, or 2+ CPU threads) and the algorithm can batch,
  `sequential` otherwise (`fedgen.execution.choose`); the run records what it used.

`batch_clients`: clients per batched computation, `auto` (sized from the model and the free
memory) or a number (1 to MAX_USERS_PER_ROUND).

How the defaults keep old runs' identity: the schema's default is `sequential`, and a spec
at `execution: sequential`, `batch_clients: auto` dumps without either field, so the
canonical JSON, `spec_hash` and `result_hash` of every spec written before the fields
existed stay as they were (and so do the fingerprints). `auto` is the default of *new*
runs: `fedgen run` and the lab apply `NEW_RUN_DEFAULTS` to a submitted mapping that does
not name `execution` (`with_new_run_defaults`), so the choice is written into the new run's
spec. A stored spec without the field is an old run, and resumes sequentially.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from fedgen.spec_base import MAX_USERS_PER_ROUND

Execution = Literal["sequential", "batched", "auto"]

EXECUTION_DESCRIPTION = (
    "How a round's local updates run: 'sequential' (one client after another), 'batched' (the "
    "selected clients as one stacked computation; equal within float tolerance), 'auto' "
    "(batched where faster: a GPU or 2+ CPU threads, and an algorithm that can batch)."
)
BATCH_CLIENTS_DESCRIPTION = (
    f"Clients per batched computation under execution 'batched'/'auto': 'auto' (sized from the "
    f"model and the free memory) or 1 to {MAX_USERS_PER_ROUND}."
)

# The fields' values at which a spec dumps exactly as before they existed.
OMITTED_AT = {"execution": "sequential", "batch_clients": "auto"}

# What a new run gets when its submitted spec does not say (see the module docstring).
NEW_RUN_DEFAULTS: dict[str, Any] = {"execution": "auto"}


def _batch_clients(value: Any) -> Any:
    if value == "auto" and isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_USERS_PER_ROUND:
        return value
    raise ValueError(f"must be 'auto' or an integer from 1 to {MAX_USERS_PER_ROUND}")


BatchClients = Annotated[
    Literal["auto"] | int,
    BeforeValidator(_batch_clients),
    WithJsonSchema(
        {
            "anyOf": [
                {"const": "auto", "type": "string"},
                {"type": "integer", "minimum": 1, "maximum": MAX_USERS_PER_ROUND},
            ],
            "default": "auto",
            "description": BATCH_CLIENTS_DESCRIPTION,
        }
    ),
]

EXECUTION_FIELD: Any = Field("sequential", description=EXECUTION_DESCRIPTION)
BATCH_CLIENTS_FIELD: Any = Field("auto", description=BATCH_CLIENTS_DESCRIPTION)


def drop_defaults(dumped: Any) -> Any:
    """Remove `execution`/`batch_clients` from a dumped spec where they hold `OMITTED_AT`."""
    if isinstance(dumped, dict):
        for key, value in OMITTED_AT.items():
            if key in dumped and dumped[key] == value:
                del dumped[key]
    return dumped


def with_new_run_defaults(data: Any) -> Any:
    """A submitted spec mapping with `NEW_RUN_DEFAULTS` for the keys it leaves out."""
    if not isinstance(data, dict):
        return data
    return {**NEW_RUN_DEFAULTS, **data}
