"""Text the lab can store: no NUL character (PostgreSQL's text and jsonb cannot hold one) and no
lone surrogate (U+D800..U+DFFF alone is not a Unicode character: neither UTF-8 nor the JSON
encoder can write it). The API refuses both in every string a client sends (api/input_text.py),
and a `where` value decoded from JSON (lab/repository/spec_filter.py), with a 422 naming the
field, so neither reaches the database."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_BAD = re.compile("[\x00\ud800-\udfff]")


_UNSHOWN = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def shown(text: str) -> str:
    """`text` with NUL, surrogates and other control characters escaped (`\\x00`, `\\ud800`),
    so it can be echoed in a JSON answer; other characters as they are."""
    return _UNSHOWN.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def text_problem(text: str) -> str | None:
    """What makes `text` unstorable (naming the character and where), or None."""
    m = _BAD.search(text)
    if m is None:
        return None
    if m.group() == "\x00":
        return f"holds a NUL character (\\x00) at character {m.start()}; text may not contain NUL"
    return (
        f"holds a lone surrogate ({shown(m.group())}) at character {m.start()}, which is not a "
        "Unicode character; text must be valid Unicode"
    )


def bad_strings(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """(path, problem) of every unstorable string in a decoded JSON value, keys included (a bad
    key is reported at its parent's path, naming the key)."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            problem = text_problem(node)
            if problem is not None:
                yield where, problem
        elif isinstance(node, dict):
            for key, child in node.items():
                problem = text_problem(key)
                if problem is not None:
                    yield where, f"the key '{shown(key)}' {problem}"
                stack.append((child, (*where, shown(key))))
        elif isinstance(node, list):
            stack.extend((child, (*where, str(i))) for i, child in enumerate(node))
