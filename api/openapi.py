"""The OpenAPI document: FastAPI's, plus the spec's real schema and the limits of this app.

- `ExperimentSpecInput`: fedgen.spec.ExperimentSpec's input schema (mode="validation":
  every field optional, defaults fill in), with its sections as components; each algorithm
  variant requires its `name` (the discriminator).
- `SweepGridFields`: dotted spec field -> list of values, one property per field.
- `SweepGrid`: those fields, and with an `algorithm` key, `algorithm.<param>` only where every
  algorithm listed has that parameter.
- `SweepCreate`: without one, only where the base's algorithm has it (FedAvg by default).
- `SpecChanges`: a clone's changes (the spec's schema; `algorithm` may omit `name`).
- `limit` query parameters: maximum = FEDGEN_MAX_PAGE_SIZE of this app.
"""

from __future__ import annotations

import copy
import json
import threading
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.routing import BaseRoute, Mount

from fedgen.spec import ExperimentSpec
from fedgen.sweep import MAX_SWEEP_RUNS
from lab.config import Settings

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
    # `data`: the spec's data section without its if/then/else on `folder` (required with
    # the name 'folder', null with another): changes are merged over a spec that may hold it.
    data_ref = out["properties"]["data"]["$ref"]
    data = {
        k: v
        for k, v in copy.deepcopy(_deref({"$ref": data_ref}, defs)).items()
        if k not in ("if", "then", "else")
    }
    data["title"] = "DataChanges"
    data["description"] = "Data fields merged over the run's own data section."
    out["properties"]["data"] = data
    out["title"] = "SpecChanges"
    out["description"] = "Spec fields to merge over a run's spec; any subset of the spec."
    return out


def _parameters_by_algorithm(
    algorithm: dict[str, Any], defs: dict[str, Any]
) -> tuple[dict[str, str], dict[str, set[str]]]:
    """(algorithm name -> its component's $ref, algorithm name -> its parameters but `name`)."""
    mapping: dict[str, str] = algorithm["discriminator"]["mapping"]
    has = {
        n: set(_deref({"$ref": ref}, defs)["properties"]) - {"name"} for n, ref in mapping.items()
    }
    return mapping, has


def _algorithm_rule(algorithm: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The grid's `anyOf`: with an `algorithm` key, an `algorithm.<param>` key only where every
    algorithm that key lists has the parameter (each run of the product sets it on each).

    One branch per set of algorithms S (the sets of a parameter's owners, all algorithms, and
    their intersections): `algorithm` lists only S's names or mappings, and the parameters
    some algorithm of S lacks are absent. Plus a branch without `algorithm` (the base's
    algorithm decides, a rule the API checks). This is exact. It sits beside a `$ref` to the
    fields (`_grid`), never inline with them: Schemathesis' canonical form (jsonschema_rs)
    intersects inline properties with every branch at once, and past about ten branches of
    this grid's ninety fields gives up (any form: `anyOf`, `if`/`then`, `dependentSchemas`);
    behind the `$ref` it intersects the fields with the one branch it draws from.
    """
    mapping, has = _parameters_by_algorithm(algorithm, defs)
    params = sorted(set().union(*has.values()))
    owners = {p: frozenset(n for n in mapping if p in has[n]) for p in params}
    sets = {frozenset(mapping), *owners.values()}
    while more := {a & b for a in sets for b in sets} - sets - {frozenset()}:
        sets |= more
    branches: list[dict[str, Any]] = [
        {"description": "no `algorithm` key", "properties": {"algorithm": False}}
    ]
    for algos in sorted(sets, key=lambda a: (-len(a), sorted(a))):
        names = sorted(algos)
        # Names only: the property's own schema already holds each mapping to its params model
        # (every one requires `name`), and $refs here grow the rule past what generators expand.
        listed = {
            "anyOf": [
                {"type": "string", "enum": names},
                {"type": "object", "required": ["name"], "properties": {"name": {"enum": names}}},
            ]
        }
        absent = {f"algorithm.{p}": False for p in params if not algos <= owners[p]}
        branches.append(
            {
                "description": f"`algorithm` lists only {', '.join(names)}",
                "properties": {"algorithm": {"items": listed}, **absent},
            }
        )
    return branches


def _base_algorithm_rule(algorithm: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """SweepCreate's `anyOf`: a grid without an `algorithm` key sets its `algorithm.<param>`
    keys on the base's algorithm (FedAvg's when the base names none), which must have them.

    One branch for a grid with `algorithm` (SweepGrid's own rule applies), and one per
    algorithm the base may name, without the grid keys of parameters that algorithm lacks.
    """
    mapping, has = _parameters_by_algorithm(algorithm, defs)
    params = sorted(set().union(*has.values()))
    default = ExperimentSpec().algorithm.name
    branches: list[dict[str, Any]] = [
        {
            "description": "the grid has an `algorithm` key",
            "required": ["grid"],
            "properties": {"grid": {"required": ["algorithm"]}},
        }
    ]
    for name in sorted(mapping):
        names_it: dict[str, Any] = {
            "required": ["algorithm"],
            "properties": {"algorithm": {"properties": {"name": {"const": name}}}},
        }
        lacks = {f"algorithm.{p}": False for p in params if p not in has[name]}
        branch: dict[str, Any] = {
            "description": f"the base's algorithm is {name}",
            "properties": {
                "base": names_it
                if name != default
                else {"anyOf": [names_it, {"properties": {"algorithm": False}}]},
                "grid": {"properties": lacks},
            },
        }
        if name != default:
            branch["required"] = ["base"]
        branches.append(branch)
    return branches


def _grid(spec: dict[str, Any], defs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(SweepGridFields: one property per dotted field, a non-empty list of that field's values;
    SweepGrid: those fields by `$ref`, and with an `algorithm` key only parameters every listed
    algorithm has (`_algorithm_rule`))."""
    fields: dict[str, dict[str, Any]] = {}
    rule: list[dict[str, Any]] = []
    for name, prop in spec["properties"].items():
        if name == "algorithm":
            names = sorted(prop["discriminator"]["mapping"])
            fields["algorithm"] = {
                "anyOf": [{"type": "string", "enum": names}, *copy.deepcopy(prop["oneOf"])]
            }
            for p, schema in _algorithm_params(prop, defs).items():
                fields[f"algorithm.{p}"] = schema
            rule = _algorithm_rule(prop, defs)
            continue
        target = _deref(prop, defs)
        if target.get("type") == "object" and "properties" in target:
            for sub, ss in target["properties"].items():
                fields[f"{name}.{sub}"] = {k: v for k, v in ss.items() if k != "default"}
        else:
            fields[name] = {k: v for k, v in prop.items() if k != "default"}
    fields_schema = {
        "title": "SweepGridFields",
        "description": "Dotted spec field -> the values it takes, each field alone.",
        "type": "object",
        "maxProperties": MAX_GRID_KEYS,
        "additionalProperties": False,
        "properties": {
            k: {"type": "array", "minItems": 1, "maxItems": MAX_SWEEP_RUNS, "items": v}
            for k, v in fields.items()
        },
    }
    return fields_schema, {
        "title": "SweepGrid",
        "description": (
            "Dotted spec field -> the values it takes; runs are the cartesian product (at most "
            f"{MAX_SWEEP_RUNS}). `algorithm` takes names or parameter mappings; "
            "`algorithm.<param>` needs an algorithm with that parameter: every one the "
            "`algorithm` key lists, or the base's when the grid has no `algorithm` key. A field "
            "is applied before its sub-fields, whatever the key order. A key naming several "
            'fields ("partition.alpha,local_steps") is one axis whose values are lists, one '
            "value per field."
        ),
        "allOf": [{"$ref": REF.format(model="SweepGridFields")}],
        "anyOf": rule,
    }


def build_openapi(app: FastAPI, settings: Settings) -> dict[str, Any]:
    """The app's OpenAPI document (cached on the app like FastAPI's own): its routes' shared
    document with this app's page-size limit."""
    if app.openapi_schema:
        return app.openapi_schema
    doc = copy.deepcopy(route_document(app))
    for ops in doc.get("paths", {}).values():
        for op in ops.values():
            for param in op.get("parameters", []):
                if param.get("name") == "limit" and param.get("in") == "query":
                    param["schema"]["maximum"] = settings.max_page_size
    app.openapi_schema = doc
    return doc


def schema_routes(app: FastAPI) -> tuple[BaseRoute, ...]:
    """The routes the document may list: the docs' static files (a Mount) and the routes kept
    out of the schema (the root probes) are new in every app."""
    return tuple(
        r for r in app.routes if not isinstance(r, Mount) and getattr(r, "include_in_schema", True)
    )


def route_document(app: FastAPI) -> dict[str, Any]:
    """The document of `app`'s routes, without any app's settings; read only.

    Built once a process for each set of routes and spec schema: every app lists the same
    /api/v1 routes (api.main.v1_routes), and building costs about 0.5 s, which every new app
    paid on its first /openapi.json or first request. The spec's schema is part of the key
    because a plugin loaded later adds its algorithm to it.
    """
    routes = schema_routes(app)
    spec, defs = _spec_components()
    about = (app.title, app.version, app.description)
    key = (tuple(map(id, routes)), about, json.dumps([spec, defs], sort_keys=True))
    with _LOCK:  # apps in other threads of the process (the tests' servers) wait for it
        built = _BUILT.get(key)
        if built is None:
            while len(_BUILT) >= _MAX_BUILT:
                del _BUILT[next(iter(_BUILT))]
            # The routes are kept with their document, so their ids stay theirs.
            built = _BUILT[key] = (routes, _document(routes, about, spec, defs))
    return built[1]


_MAX_BUILT = 8  # sets of routes and spec schemas: one in a server, a few in the tests
_BUILT: dict[tuple[Any, ...], tuple[tuple[BaseRoute, ...], dict[str, Any]]] = {}
_LOCK = threading.Lock()


def _document(
    routes: tuple[BaseRoute, ...],
    about: tuple[str, str, str],
    spec: dict[str, Any],
    defs: dict[str, Any],
) -> dict[str, Any]:
    title, version, description = about
    doc = get_openapi(title=title, version=version, description=description, routes=routes)
    components = doc.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in defs.items():
        if name in components:
            raise RuntimeError(f"OpenAPI component {name} defined twice")
        components[name] = schema
    components["ExperimentSpecInput"] = spec
    components["SweepGridFields"], components["SweepGrid"] = _grid(copy.deepcopy(spec), defs)
    components["SweepCreate"]["anyOf"] = _base_algorithm_rule(spec["properties"]["algorithm"], defs)
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
    return doc
