"""The Runs page's filters: spec-field clauses as typed, and the API's refusal of them said one
problem a line. No Streamlit.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import ValidationError

from vocab.schemas.errors import ValidationErrorBody


@dataclass(frozen=True)
class RunFilters:
    """The filters picked above the Runs table, as GET /runs takes them ("" or no clause:
    not filtered by it)."""

    status: str = ""
    algorithm: str = ""
    dataset: str = ""
    owner: str = ""
    tag: str = ""
    where: tuple[str, ...] = field(default_factory=tuple)  # `where_clauses`
    q: str = ""

    def params(self) -> dict[str, Any]:
        """GET /runs's query parameters, every filter named (`where` a list of clauses)."""
        return {**asdict(self), "where": list(self.where)}


def where_clauses(text: str) -> list[str]:
    """`algorithm.gen_batch_size=32; partition.alpha=0.1` -> the API's `where` clauses."""
    return [c.strip() for c in text.replace("\n", ";").split(";") if c.strip()]


def filter_problems(detail: Any, fallback: str) -> str:
    """The API's 422 on the filters as Markdown, one line per problem ("where: alpha is not a
    spec field; did you mean partition.alpha?"), not only the first; `fallback` without any."""
    try:
        items = ValidationErrorBody.model_validate({"detail": detail}).detail
    except ValidationError:
        items = []  # not a 422 body (every 422 is one: vocab.schemas.errors)
    lines = [item.msg for item in items if item.msg]
    # Field names hold `_` and `*` would start emphasis: escaped, they read as typed.
    escaped = [re.sub(r"([\\`*_\[\]<>#|~])", r"\\\1", line) for line in lines or [fallback]]
    return "Check the filters:\n" + "\n".join(f"- {line}" for line in escaped)
