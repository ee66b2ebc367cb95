"""The spec in requests (its schema by reference) and the answers about specs: validation,
the algorithms, the defaults and the spec's JSON Schema."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from fedgen.algorithms.registry import sharing_predictor
from vocab.schemas.base import In

# The spec as requests send it: the input schema of fedgen.spec.ExperimentSpec (every field
# optional, defaults fill in), put into the OpenAPI components by api.openapi. The handler
# still validates with fedgen.spec.parse_spec (field errors under `spec.`).
# (allOf: pydantic resolves a bare $ref it did not generate, and fails.)
SpecIn = Annotated[
    dict[str, Any],
    WithJsonSchema({"allOf": [{"$ref": "#/components/schemas/ExperimentSpecInput"}]}),
]

SpecChangesIn = Annotated[
    dict[str, Any], WithJsonSchema({"allOf": [{"$ref": "#/components/schemas/SpecChanges"}]})
]

GridIn = Annotated[
    dict[str, list[Any]], WithJsonSchema({"allOf": [{"$ref": "#/components/schemas/SweepGrid"}]})
]

CROSS_FIELD = (
    "Cross-field rules (422 with both fields named): users_per_round <= partition.num_users; "
    f"share='predictor' only with {' or '.join(sharing_predictor())} (the algorithms that "
    "declare it); a partition the "
    "dataset can satisfy (enough samples for num_users x min_samples)."
)


class SpecValidate(In):
    """POST /spec/validate."""

    spec: SpecIn = Field(description=CROSS_FIELD)


class SpecWarning(BaseModel):
    """A field of a valid spec the server has doubts about: sent anyway, said beside it."""

    field: str = Field(description="dotted field name, e.g. spec.data.folder.path")
    msg: str


class SpecValidated(BaseModel):
    """POST /spec/validate: the spec in canonical form (every default written out)."""

    ok: Literal[True]
    spec: dict[str, Any] = Field(description="an ExperimentSpec, every field present")
    spec_hash: str
    warnings: list[SpecWarning] = Field(
        default_factory=list,
        description="What the dataset's own check finds on the server's host for a dataset "
        "whose files the spec names (`folder`): a missing folder, a wrong shape or class count. "
        "Not an error: the worker that runs it may be another host that has the files, and it "
        "checks them again (the run fails naming the field when they are wrong there too).",
    )


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


class SpecJsonSchema(BaseModel):
    """GET /spec/schema: the JSON Schema (draft 2020-12) of ExperimentSpec, as pydantic writes it.

    A JSON Schema document is open by nature: the keywords pydantic writes are listed (in its
    order, so the document reads as before), any other keyword is passed through unchanged.
    """

    model_config = ConfigDict(extra="allow")

    defs: dict[str, Any] = Field(
        alias="$defs", description="the nested models' schemas, referenced as #/$defs/<name>"
    )
    additional_properties: bool = Field(
        alias="additionalProperties", description="false: unknown spec fields are rejected"
    )
    description: str
    properties: dict[str, Any] = Field(description="one JSON Schema per top-level spec field")
    title: str
    type: Literal["object"]
