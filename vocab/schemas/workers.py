"""GET /workers: the live worker processes, their devices and the runs they hold."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from vocab.schemas.base import IdStr


class WorkerDevice(BaseModel):
    """A device a worker computes on: the CPU (model, cores) or one GPU (name, memory)."""

    kind: Literal["cpu", "cuda"]
    name: str | None = None
    cores: int | None = None
    index: str | None = Field(None, description="GPU: its id in CUDA_VISIBLE_DEVICES.")
    memory_bytes: int | None = Field(None, description="GPU: total memory.")


class WorkerRun(BaseModel):
    """A run a worker holds now."""

    id: IdStr
    algorithm: str
    dataset: str
    current_round: int
    rounds: int


class WorkerPublic(BaseModel):
    """A live worker process (one slot) and what it can run."""

    name: str = Field(description="Node name, slot@host; runs and segments record it.")
    host: str | None
    queues: list[str] = Field(description="The run queues it serves (cpu, gpu), prefix included.")
    slots: int = Field(description="Runs it takes at once.")
    threads: int | None = Field(description="Torch threads per run.")
    devices: list[WorkerDevice]
    code_version: str | None = Field(
        description="The code it runs: git:<commit>[+dirty] or src:<hash of the sources>."
    )
    datasets: list[str] | None = Field(
        description="Datasets it can load (files found; those that failed to load here left "
        "out); null for a worker that does not say (taken to load all)."
    )
    started_at: datetime
    heartbeat_at: datetime
    running: list[WorkerRun] = Field(description="The runs it holds now.")


class WorkersPublic(BaseModel):
    """The live workers of the lab."""

    workers: list[WorkerPublic]
    slots: int = Field(description="Total slots of the live workers.")
    busy: int = Field(description="Slots holding a run now.")
