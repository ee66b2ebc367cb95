"""The spec's own routes: validation (POST /spec/validate), the defaults an empty submission
gets (GET /spec/defaults) and the JSON schema the dashboard builds its form from (GET
/spec/schema)."""

from __future__ import annotations

from fastapi import APIRouter

from api import service
from api.deps import SettingsDep, UserDep
from fedgen.algorithms.registry import algorithms
from fedgen.spec import ExperimentSpec
from vocab.schemas.errors import AUTHED, BODY, error_responses
from vocab.schemas.spec import (
    AlgorithmInfo,
    SpecDefaults,
    SpecJsonSchema,
    SpecValidate,
    SpecValidated,
    SpecWarning,
)

router = APIRouter()


@router.post("/spec/validate", tags=["spec"], responses=error_responses(*AUTHED, *BODY))
def validate_spec(body: SpecValidate, user: UserDep, settings: SettingsDep) -> SpecValidated:
    """Validate a spec; returns its canonical form (every default written out) and, for a
    `folder` dataset, what its files look like from the server's host (`warnings`).

    `data.root` and `data.folder.path` must resolve inside the lab's data roots
    (FEDGEN_DATA_ROOTS), else 422 naming the field: a member is told one message, nothing
    about other folders or the server's paths (an admin: the path and the roots)."""
    admin = bool(user.is_admin)
    spec = service.validate_spec(body.spec)
    service.check_data_paths(spec, settings, detailed=admin)
    warnings = service.host_warnings(spec, detailed=admin)
    return SpecValidated(
        ok=True,
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        warnings=[SpecWarning(field=f, msg=m) for f, m in warnings],
    )


@router.get("/spec/defaults", tags=["spec"], responses=error_responses(*AUTHED))
def spec_defaults(_user: UserDep) -> SpecDefaults:
    """The full spec an empty submission (`{"spec": {}}`) gets: every default written out.

    The same as `fedgen validate` of an empty file; the Submit form starts from it.
    `algorithms`: every algorithm this server knows (built-ins, then installed plugins:
    `fedgen.algorithms.registry`) with its label, colour, what it can share, where it comes
    from and its own defaults (the `algorithm` section a spec naming only it gets).
    """
    spec = service.validate_spec({})
    return SpecDefaults(
        spec=spec.model_dump(mode="json"),
        spec_hash=spec.spec_hash(),
        algorithms=[
            AlgorithmInfo(
                name=d.name,
                label=d.label,
                paper_label=d.paper_label,
                colour=d.colour,
                shares=sorted(d.shares),
                source=d.source,
                defaults=d.params_cls(name=d.name).model_dump(mode="json"),
            )
            for d in algorithms()
        ],
    )


@router.get("/spec/schema", tags=["spec"], responses=error_responses(*AUTHED))
def spec_schema(_user: UserDep) -> SpecJsonSchema:
    """The JSON schema of ExperimentSpec (the dashboard builds its form from it)."""
    return SpecJsonSchema.model_validate(ExperimentSpec.model_json_schema())
