"""The OpenAPI document: FastAPI's, plus the spec's real schema and the limits of this app.

- `ExperimentSpecInput`: fedgen.spec.ExperimentSpec's input schema (mode="validation":
  every field optional, defaults fill in), with its sections as components; each algorithm
  variant requires its `name` (the discriminator).
- `SweepGrid`: dotted spec field -> list of values, one property per field.
- `SpecChanges`: a clone's changes (the spec's schema; `algorithm` may omit `name`).
- `limit` query parameters: maximum = FEDGEN_MAX_PAGE_SIZE of this app.
"""

from __future__ import annotations

import copy
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from api.config import Settings
from fedgen.spec import ExperimentSpec
from fedgen.sweep import MAX_SWEEP_RUNS

REF = "#/components/schemas/{model}"
MAX_GRID_KEYS = 16


def _spec_components() -> tuple[dict[str, Any], dict[str, Any]]:
    """(ExperimentSpecInput, its section schemas by name)."""
    schema = ExperimentSpec.model_json_schema(mode="validation", ref_template=REF)
    defs: dict[str, Any] = schema.pop("$defs", {})
    algo = schema["properties"]["algorithm"]
    for ref in algo.get("discriminator", {}).get("mapping", {}).values():
        variant = defs[ref.rsplit("/", 1)[1]]
        variant["required"] = sorted({*variant.get("required", []), "name"})
    schema["title"] = "ExperimentSpecInput"
    return schema, defs


def _deref(s: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """The schema `s` points to when it is a `$ref` into `defs`, else `s`."""
    return defs[s["$ref"].rsplit("/", 1)[1]] if "$ref" in s else s


def _algorithm_params(algorithm: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Every algorithm parameter but `name` -> its schema (anyOf where algorithms differ)."""
    params: dict[str, list[dict[str, Any]]] = {}
    for ref in algorithm["discriminator"]["mapping"].values():
        for p, ps in _deref({"$ref": ref}, defs)["properties"].items():
            if p != "name":
                clean = {k: v for k, v in ps.items() if k not in ("default", "title")}
                if clean not in params.setdefault(p, []):
                    params[p].append(clean)
    return {p: o[0] if len(o) == 1 else {"anyOf": o} for p, o in sorted(params.items())}


def _changes(spec: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A clone's `changes`: the spec's input schema, where `algorithm` may also be a mapping of
    parameters without `name` (merged over the run's own algorithm, which must have them)."""
    out = copy.deepcopy(spec)
    algorithm = out["properties"]["algorithm"]
    own = {
        "type": "object",
        "description": "Parameters of the run's own algorithm (no `name`: it stays).",
        "additionalProperties": False,
        "properties": _algorithm_params(algorithm, defs),
    }
    out["properties"]["algorithm"] = {
        "title": "AlgorithmChanges",
        "anyOf": [*algorithm["oneOf"], own],
    }
    out["title"] = "SpecChanges"
    out["description"] = "Spec fields to merge over a run's spec; any subset of the spec."
    return out


def _grid(spec: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """One property per dotted field: a non-empty list of that field's values."""
    fields: dict[str, dict[str, Any]] = {}
    for name, prop in spec["properties"].items():
        if name == "algorithm":
            names = sorted(prop["discriminator"]["mapping"])
            fields["algorithm"] = {
                "anyOf": [{"type": "string", "enum": names}, *copy.deepcopy(prop["oneOf"])]
            }
            for p, schema in _algorithm_params(prop, defs).items():
                fields[f"algorithm.{p}"] = schema
            continue
        target = _deref(prop, defs)
        if target.get("type") == "object" and "properties" in target:
            for sub, ss in target["properties"].items():
                fields[f"{name}.{sub}"] = {k: v for k, v in ss.items() if k != "default"}
        else:
            fields[name] = {k: v for k, v in prop.items() if k != "default"}
    return {
        "title": "SweepGrid",
        "description": (
            "Dotted spec field -> the values it takes; runs are the cartesian product (at most "
            f"{MAX_SWEEP_RUNS}). `algorithm` takes names or parameter mappings; "
            "`algorithm.<param>` needs an algorithm with that parameter. A key naming several "
            'fields ("partition.alpha,local_steps") is one axis whose values are lists, one '
            "value per field."
        ),
        "type": "object",
        "maxProperties": MAX_GRID_KEYS,
        "additionalProperties": False,
        "properties": {
            k: {"type": "array", "minItems": 1, "maxItems": MAX_SWEEP_RUNS, "items": v}
            for k, v in fields.items()
        },
    }


def build_openapi(app: FastAPI, settings: Settings) -> dict[str, Any]:
    """The app's OpenAPI document (cached on the app like FastAPI's own)."""
    if app.openapi_schema:
        return app.openapi_schema
    doc = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    components = doc.setdefault("components", {}).setdefault("schemas", {})
    spec, defs = _spec_components()
    for name, schema in defs.items():
        if name in components:
            raise RuntimeError(f"OpenAPI component {name} defined twice")
        components[name] = schema
    components["ExperimentSpecInput"] = spec
    components["SweepGrid"] = _grid(copy.deepcopy(spec), defs)
    components["SpecChanges"] = _changes(spec, defs)
    # FastAPI's own 422 models are unused: every route documents the body it sends.
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    ours = {"$ref": REF.format(model="ValidationErrorBody")}
    for ops in doc.get("paths", {}).values():
        for op in ops.values():
            # FastAPI adds its own 422 to routes with parameters; ours is the body we send.
            for resp in op.get("responses", {}).values():
                for media in resp.get("content", {}).values():
                    if media.get("schema", {}).get("$ref", "").endswith("/HTTPValidationError"):
                        media["schema"] = ours
            # The HTTP server itself answers 400 in plain text to a request it cannot parse
            # (e.g. a request line over its size limit), before the app sees it.
            bad = op["responses"].setdefault(
                "400", {"description": "Malformed HTTP request", "content": {}}
            )
            bad.setdefault("content", {})["text/plain"] = {"schema": {"type": "string"}}
            for param in op.get("parameters", []):
                if param.get("name") == "limit" and param.get("in") == "query":
                    param["schema"]["maximum"] = settings.max_page_size
    app.openapi_schema = doc
    return doc
