"""The contract run's trash-aware stateful checks (scripts/contract_hooks.py).

Schemathesis's use_after_free (ST301) and ensure_resource_availability (ST302) took the trash
for bugs: a run read again after DELETE then restore, or a restore of a run not in the trash
(404 by design). Which sequences its stateful phase draws changes from run to run, so
`make contract` passed or failed by chance. The versions that run instead pass exactly those.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from schemathesis.openapi.checks import UseAfterFree

from scripts import contract, contract_hooks

RUN = "/api/v1/runs/1a2b"


def _case(cid: str, method: str, path: str) -> Any:
    return SimpleNamespace(id=cid, method=method, path=path, formatted_path=path)


def _ctx(*steps: tuple[Any, int]) -> Any:
    """A check context whose scenario holds `steps` (case, status) in order."""
    statuses = {case.id: SimpleNamespace(status_code=code) for case, code in steps}
    internals = SimpleNamespace(
        find_all_cases=lambda: iter([case for case, _ in steps]),
        find_response=lambda case_id: statuses.get(case_id),
    )
    return SimpleNamespace(internals=internals)


def _freed(*_args: Any) -> None:
    raise UseAfterFree(
        operation="DELETE /api/v1/runs/{run_id}",
        message="deleted resource still available",
        free=f"DELETE {RUN}",
        usage=f"GET {RUN}",
        deleted_case_id="delete",
    )


DELETE = _case("delete", "DELETE", RUN)
READ = _case("read", "GET", RUN)


@pytest.mark.parametrize(
    ("between", "restored"),
    [
        ([(_case("restore", "POST", RUN + "/restore"), 200)], True),
        ([(_case("restore", "POST", RUN + "/restore"), 404)], False),
        ([(_case("restore", "POST", "/api/v1/runs/other/restore"), 200)], False),
        ([], False),
    ],
)
def test_a_read_after_delete_passes_only_when_a_restore_came_between(
    monkeypatch: pytest.MonkeyPatch, between: list[tuple[Any, int]], restored: bool
) -> None:
    monkeypatch.setattr(contract_hooks, "use_after_free", _freed)
    ctx = _ctx((DELETE, 204), *between, (READ, 200))
    if restored:
        assert contract_hooks.use_after_free_but_restore(ctx, None, READ) is None
    else:
        with pytest.raises(UseAfterFree):
            contract_hooks.use_after_free_but_restore(ctx, None, READ)


def test_a_restore_after_the_read_does_not_excuse_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contract_hooks, "use_after_free", _freed)
    ctx = _ctx((DELETE, 204), (READ, 200), (_case("restore", "POST", RUN + "/restore"), 200))
    with pytest.raises(UseAfterFree):
        contract_hooks.use_after_free_but_restore(ctx, None, READ)


def test_a_restores_404_is_not_a_created_resource_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(*_args: Any) -> None:
        raise AssertionError("created resource not found")

    monkeypatch.setattr(contract_hooks, "ensure_resource_availability", missing)
    restore = _case("restore", "POST", "/api/v1/runs/{run_id}/restore")
    assert contract_hooks.ensure_resource_availability_but_restore(None, None, restore) is None
    with pytest.raises(AssertionError):
        contract_hooks.ensure_resource_availability_but_restore(
            None, None, _case("get", "GET", "/api/v1/runs/{run_id}/checkpoints")
        )


def test_the_contract_run_uses_them_instead_of_the_builtin_checks() -> None:
    """scripts/contract.py excludes the two built-in checks its hooks replace."""
    source = Path(contract.__file__).read_text()
    assert '"use_after_free,ensure_resource_availability"' in source
