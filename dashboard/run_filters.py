"""The Runs page's filters: spec-field clauses as typed, and the API's refusal of them said one
problem a line. No Streamlit.
"""

from __future__ import annotations

import re
from typing import Any


def where_clauses(text: str) -> list[str]:
    """`algorithm.gen_batch_size=32; partition.alpha=0.1` -> the API's `where` clauses."""
    return [c.strip() for c in text.replace("\n", ";").split(";") if c.strip()]


def filter_problems(detail: Any, fallback: str) -> str:
    """The API's 422 on the filters as Markdown, one line per problem ("where: alpha is not a
    spec field; did you mean partition.alpha?"), not only the first; `fallback` without any."""
    items = detail if isinstance(detail, list) else []
    lines = [str(d["msg"]) for d in items if isinstance(d, dict) and d.get("msg")]
    # Field names hold `_` and `*` would start emphasis: escaped, they read as typed.
    escaped = [re.sub(r"([\\`*_\[\]<>#|~])", r"\\\1", line) for line in lines or [fallback]]
    return "Check the filters:\n" + "\n".join(f"- {line}" for line in escaped)
