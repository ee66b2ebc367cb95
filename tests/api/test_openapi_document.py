"""api.openapi: apps share their routes' document, built once a process, and each app's copy
carries its own settings; a plugin registered later gets a new document."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from api.main import create_app
from api.openapi import route_document
from fedgen.algorithms import registry
from fedgen.algorithms.params import AlgorithmParams
from lab.config import Settings
from tests.support.toy_algorithms import fedavg_under


class _DocParams(AlgorithmParams):
    """A test-only algorithm, to change the spec's schema."""

    name: Literal["doc-probe"] = "doc-probe"


def _app(settings: Settings, page: int) -> Any:
    s = settings.model_copy(update={"max_page_size": page})
    return create_app(s, enqueue=lambda rid, dev: None, broker_check=lambda: None)


def _limit_maxima(doc: dict[str, Any]) -> set[int | None]:
    """The `maximum` of every `limit` query parameter (None where it has none)."""
    return {
        p["schema"].get("maximum")
        for ops in doc["paths"].values()
        for op in ops.values()
        for p in op.get("parameters", [])
        if p["name"] == "limit" and p["in"] == "query"
    }


def test_apps_share_the_route_document_and_keep_their_own_limits(settings: Settings) -> None:
    """Two apps with other page-size limits: one route document, two served documents, each
    with its own `limit` maximum and otherwise the same."""
    # Prepare
    small, large = _app(settings, 50), _app(settings, 700)
    # Execute
    shared = route_document(small)
    served_small, served_large = small.openapi(), large.openapi()
    # Assert
    assert route_document(large) is shared
    assert _limit_maxima(served_small) == {50}
    assert _limit_maxima(served_large) == {700}
    assert _limit_maxima(shared) == {None}
    assert served_small["components"] == served_large["components"] == shared["components"]


@pytest.mark.usefixtures("algorithms_restored")
def test_an_algorithm_registered_later_is_in_the_next_document(settings: Settings) -> None:
    """The spec's schema is part of what the document is built for: a plugin loaded after the
    first document appears in the next app's."""
    # Prepare
    before = route_document(_app(settings, 100))
    registry.register_algorithm(fedavg_under("doc-probe", _DocParams))
    # Execute
    after = _app(settings, 100).openapi()
    # Assert
    mapping = after["components"]["schemas"]["ExperimentSpecInput"]["properties"]["algorithm"]
    assert "doc-probe" in mapping["discriminator"]["mapping"]
    assert after["components"] != before["components"]
