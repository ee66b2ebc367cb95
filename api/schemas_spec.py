"""Responses about specs and tokens: /spec/validate, /spec/defaults, /runs/{id}/stream-token."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class SpecValidated(BaseModel):
    """POST /spec/validate: the spec in canonical form (every default written out)."""

    ok: Literal[True]
    spec: dict[str, Any] = Field(description="an ExperimentSpec, every field present")
    spec_hash: str


class AlgorithmInfo(BaseModel):
    """An algorithm this server knows (fedgen.algorithms.registry)."""

    name: str = Field(description="the spec's algorithm.name")
    label: str
    paper_label: str | None
    colour: str = Field(description="its colour on the Compare page")
    shares: list[str] = Field(description="what it can share, e.g. predictor")
    source: str = Field(description="fedgen for a built-in, else the plugin's distribution")
    defaults: dict[str, Any] = Field(description="the `algorithm` section naming only it")


class SpecDefaults(BaseModel):
    """GET /spec/defaults: the spec `{"spec": {}}` gets, and every algorithm with its defaults."""

    spec: dict[str, Any]
    spec_hash: str
    algorithms: list[AlgorithmInfo]


class StreamToken(BaseModel):
    """POST /runs/{id}/stream-token: pass `token` as `?token=` to GET /runs/{id}/events."""

    token: str
    run_id: str
    expires_at: int = Field(description="Unix time")
    ttl_s: int
