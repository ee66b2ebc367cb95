"""Schemathesis hooks of the contract run (`make contract`, tests/api/test_contract.py).

The schema cannot express the spec's documented cross-field rules (users_per_round <=
partition.num_users; share='predictor' with some algorithms only; data.folder with data.name
'folder' only, which a sweep grid's separate axes cannot state; a partition the dataset
can satisfy; a GPU device no live worker serves; a full checkpoint within
FEDGEN_MAX_CHECKPOINT_BYTES; a data.root or data.folder.path inside the lab's data roots
(FEDGEN_DATA_ROOTS); a grid's product at most 1000 runs; a summary's `group_by`
naming fields the sweep has; a `where` clause naming a spec field, with a value its type
can hold; a page's `limit` within FEDGEN_MAX_PAGE_SIZE; a runs page by `cursor` or by
`offset`, not both, and its cursor one a page gave), nor that a clone's `changes` are merged
over the run's own spec, which those rules then apply to (its `changes.algorithm` parameters
too: the run's own algorithm must have them). A request that satisfies the schema and breaks one of those
rules is answered 422 by design, so such requests are not generated. Only those: any other
refusal of a schema-valid body is still reported. (Which `algorithm.<param>` keys a sweep
may have is in the schema itself, SweepGrid and SweepCreate.) For a clone the hooks read the
run's spec from the API (FEDGEN_CONTRACT_API and FEDGEN_CONTRACT_TOKEN, set by
scripts/contract.py). Loaded through SCHEMATHESIS_HOOKS=scripts.contract_hooks.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import schemathesis

from api.routes.sweeps import GROUP_BY_PATTERN
from api.schemas.webhooks import url_problem
from api.service import checkpoint_problem, partition_problem
from fedgen.data.roots import allowed_roots, data_path_problems
from fedgen.spec import ExperimentSpec, SpecError, parse_spec
from fedgen.specdict import NON_GROUP_FIELDS, flatten, merge
from fedgen.sweep import SweepSpec, expand
from lab.config import Settings
from lab.plot_data import resolve_field
from lab.repository.run_list import decode_cursor
from lab.repository.spec_filter import field_problems, parse_where
from lab.webhook_targets import TargetRefused, check_target

# Sweeps expand into rows: keep generated ones small, the contract is about the shapes.
MAX_GENERATED_SWEEP_RUNS = 20
MAX_BODY_BYTES = Settings().max_body_bytes
MAX_CHECKPOINT_BYTES = Settings().max_checkpoint_bytes
MAX_PAGE_SIZE = Settings().max_page_size


# The dotted fields of every spec (an empty spec's, flattened), and group_by's pattern.
EVERY_SPEC_FIELD = frozenset(flatten(ExperimentSpec().model_dump(mode="json"))) - set(
    NON_GROUP_FIELDS
)
_GROUP_BY = re.compile(GROUP_BY_PATTERN)

CROSS_FIELD_MESSAGES = (
    "exceeds partition.num_users",
    "share='predictor' is supported by",
    # data.folder with data.name 'folder' only: a spec's schema says so (if/then/else), a
    # sweep grid's separate `data.folder` and `data.name` axes cannot.
    "only for data.name 'folder'",
    "required when data.name is 'folder'",
)


def _cross_field(loc: str, msg: str) -> bool:
    # A model-level rule (reported on each field it names); a parameter the algorithm lacks;
    # parameters set with no algorithm name.
    return (
        loc.endswith("(root)")
        or any(m in msg for m in CROSS_FIELD_MESSAGES)
        or ("algorithm." in loc and msg == "unknown field")
        or (loc.endswith("algorithm") and "discriminator" in msg)
    )


def _cross_field_only(errors: list[tuple[str, str]]) -> bool:
    """Every error is one of the documented cross-field rules."""
    return bool(errors) and all(_cross_field(loc, msg) for loc, msg in errors)


def _spec_ok(spec: Any) -> bool:
    if not isinstance(spec, dict):
        return True
    try:
        parsed = parse_spec(spec, strict=True)
    except SpecError as exc:
        return not _cross_field_only(exc.errors)
    return _submittable(parsed)


def _submittable(spec: ExperimentSpec) -> bool:
    """Documented refusals at submission: a split the dataset cannot satisfy; a GPU device no
    live worker serves (the contract's lab has no GPU worker); a checkpoint over the limit; a
    data path outside the lab's data roots (the server's are this process's: same env)."""
    return (
        partition_problem(spec) is None
        and not data_path_problems(spec.data, allowed_roots())
        and not spec.device.startswith("cuda")
        and checkpoint_problem(spec, MAX_CHECKPOINT_BYTES) is None
    )


_RUN_SPECS: dict[str, dict[str, Any] | None] = {}


def _run_spec(run_id: str) -> dict[str, Any] | None:
    """The stored spec of a run of the contract's API; None for no such run (or no API)."""
    api, token = os.environ.get("FEDGEN_CONTRACT_API"), os.environ.get("FEDGEN_CONTRACT_TOKEN")
    if not api or not token:
        return None
    if run_id not in _RUN_SPECS:  # a run's spec never changes
        url = f"{api}/runs/{urllib.parse.quote(run_id, safe='')}"
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                spec = json.load(r).get("spec")
        except urllib.error.HTTPError:  # 404 (a made-up id), 422: the API answers for itself
            spec = None
        except OSError:  # not answered now: judge the changes alone, ask again next time
            return None
        _RUN_SPECS[run_id] = spec if isinstance(spec, dict) else None
    return _RUN_SPECS[run_id]


def _clone_ok(run_id: Any, changes: Any) -> bool:
    """The changes merged over the run's spec, as the API merges them, break no rule alone."""
    spec = _run_spec(str(run_id)) if isinstance(changes, dict) else None
    return _spec_ok(changes if spec is None else merge(spec, changes))


def _sweep_ok(body: dict[str, Any]) -> bool:
    base, grid = body.get("base", {}), body.get("grid", {})
    if not isinstance(base, dict) or not isinstance(grid, dict):
        return True
    if not all(isinstance(v, list) for v in grid.values()):
        return True
    product = 1
    for values in grid.values():
        product *= max(1, len(values))
    if product > MAX_GENERATED_SWEEP_RUNS:
        return False
    try:
        specs = expand(SweepSpec.model_validate({"base": base, "grid": grid}), strict=True)
    except SpecError as exc:
        return not _cross_field_only(exc.errors)
    except Exception:  # invalid in shape: the API must refuse it, let it through
        return True
    return all(_submittable(s) for s in specs)


def _group_by_ok(query: Any) -> bool:
    """`group_by` names only fields every sweep's specs have (others: 422 naming them)."""
    if not isinstance(query, dict) or not isinstance(query.get("group_by"), str):
        return True
    names = [f.strip() for f in query["group_by"].split(",") if f.strip()]
    return all(n in EVERY_SPEC_FIELD for n in names) or not _GROUP_BY.fullmatch(query["group_by"])


def _plot_ok(query: Any) -> bool:
    """`x` and `by` name fields the sweep's specs have and differ from each other;
    time_to_target comes with its `target` (others: 422 naming the field)."""
    if not isinstance(query, dict):
        return True
    x, by = query.get("x"), query.get("by", "algorithm")
    if not isinstance(x, str) or not isinstance(by, str):
        return True  # a missing or ill-typed parameter: the schema's own 422
    x, by = resolve_field(x), resolve_field(by)
    if x not in EVERY_SPEC_FIELD or by not in EVERY_SPEC_FIELD or x == by:
        return False
    return not (query.get("statistic") == "time_to_target" and query.get("target") is None)


def _where_ok(query: Any) -> bool:
    """`where` clauses name spec fields with values their type can hold (others: 422 naming
    the field; the schema's pattern states only the clause's syntax)."""
    if not isinstance(query, dict) or query.get("where") is None:
        return True
    raw = query["where"]
    clauses = [raw] if isinstance(raw, str) else raw
    if not isinstance(clauses, list) or not all(isinstance(c, str) for c in clauses):
        return True  # ill-typed: the schema's own 422
    parsed, _syntax = parse_where(clauses)
    return not field_problems(parsed)


def _page_ok(query: Any) -> bool:
    """A page's `limit` is within FEDGEN_MAX_PAGE_SIZE; a runs page is asked for by `cursor`
    or by `offset`, and its cursor is one a page gave (others: 422 naming the field)."""
    if not isinstance(query, dict):
        return True
    limit = query.get("limit")
    if isinstance(limit, int) and limit > MAX_PAGE_SIZE:
        return False
    cursor = query.get("cursor")
    if not isinstance(cursor, str):
        return True
    if query.get("offset") not in (None, 0):
        return False
    try:
        decode_cursor(cursor)
    except ValueError:
        return False
    return True


def _webhook_ok(url: Any) -> bool:
    # The schema's pattern cannot bound the port (at most 65535), refuse a host of dots only,
    # nor say whether the host resolves to public addresses; the contract's
    # FEDGEN_WEBHOOK_ALLOW is `*` (scripts/contract.py), checked as the server checks it.
    if not isinstance(url, str):
        return True
    if url_problem(url) is not None:
        return False
    try:
        check_target(url, "*")
    except TargetRefused:
        return False
    return True


@schemathesis.hook
def filter_case(context: schemathesis.HookContext, case: schemathesis.Case) -> bool:
    """Drop cases that break only a documented rule the schema cannot express: a cross-field
    rule of the spec, an oversized sweep, a body over the size limit, a `group_by` field the
    sweep does not have (a summary's `group_by`, a plot's `x` and `by`), a page past the page
    size limit or asked for both ways, a webhook URL with a port out of range. A case hook, so
    it applies in every phase (coverage included)."""
    path = case.operation.path
    if not _page_ok(case.query):
        return False
    if path.endswith("/summary"):
        return _group_by_ok(case.query)
    if path.endswith("/plot-data"):
        return _plot_ok(case.query)
    if path.endswith("/runs") and case.method.upper() == "GET":
        return _where_ok(case.query)
    body = case.body
    if not isinstance(body, dict):
        return True
    if len(json.dumps(body).encode()) > MAX_BODY_BYTES:
        return False  # answered 413 (documented), whatever the body says
    if path.endswith("/sweeps"):
        return _sweep_ok(body)
    if path.endswith("/runs") or path.endswith("/spec/validate"):
        return _spec_ok(body.get("spec"))
    if path.endswith("/clone"):
        return _clone_ok((case.path_parameters or {}).get("run_id"), body.get("changes"))
    if path.endswith("/webhooks"):
        return _webhook_ok(body.get("url"))
    return True
