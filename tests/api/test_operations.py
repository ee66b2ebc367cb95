"""api.operations: the middleware's table of methods and bodies is the OpenAPI document's."""

from __future__ import annotations

from fastapi.testclient import TestClient

from api.main import create_app
from api.operations import OperationTable, operations
from lab.config import Settings


def test_the_table_lists_what_the_openapi_document_lists(client: TestClient) -> None:
    """Every path and method of the document, with a body exactly where it has requestBody,
    and nothing the document does not list."""
    # Prepare
    app = client.app
    # Execute
    table = operations(app)  # type: ignore[arg-type]
    doc = app.openapi()["paths"]  # type: ignore[attr-defined]
    from_doc = {
        path: {m.upper(): "requestBody" in op for m, op in ops.items()} for path, ops in doc.items()
    }
    # Assert
    assert table == from_doc
    assert any(any(ops.values()) for ops in table.values())  # some operations take bodies
    assert any(not all(ops.values()) for ops in table.values())


def test_paths_match_their_templates(client: TestClient) -> None:
    """A concrete path finds its template's methods; a path no template has finds none."""
    # Prepare
    table = OperationTable.of(client.app)  # type: ignore[arg-type]
    run = "/api/v1/runs/00000000-0000-0000-0000-000000000001"
    # Execute
    allowed = table.allowed(run)
    # Assert
    assert {"GET", "DELETE", "OPTIONS"} <= set(allowed)
    assert table.allowed("/api/v1/no-such-thing") == []
    assert table.takes_body("POST", "/api/v1/runs")
    assert not table.takes_body("GET", "/api/v1/runs")
    assert not table.takes_body("POST", "/api/v1/no-such-thing")


def test_apps_share_one_table(client: TestClient, settings: Settings) -> None:
    """Every app of the process lists the same /api/v1 routes: their table is built once
    (building the OpenAPI paths for each new app cost its first request about 0.5 s)."""
    # Prepare
    other = create_app(settings, enqueue=lambda rid, dev: None, broker_check=lambda: None)
    # Execute
    first, second = operations(client.app), operations(other)  # type: ignore[arg-type]
    # Assert
    assert first is second
