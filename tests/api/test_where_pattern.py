"""The `where` clause's schema pattern (lab.repository.spec_filter.WHERE_PATTERN) promises what
`parse_where` accepts: a clause the pattern admits is parsed without a problem, and the
malformed ones parse_where names are outside the pattern."""

from __future__ import annotations

import re

import pytest

from lab.repository.spec_filter import WHERE_PATTERN, parse_where

ADMITTED = [
    "algorithm.gen_batch_size=32",
    " partition.alpha = 0.1",
    "data.root=null",
    'algorithm.gen_batch_size="32"',
    "note=",
    "note=\x1c[1]",  # not JSON: the string as given
    "a.b.c.d.e.f=1",  # MAX_FIELD_DEPTH levels
    "lr=\n0.05",
]
REFUSED = ["alpha", "=1", "a..b=1", "1x=2", "tags=[1]", 'x= {"a": 1}', "a.b.c.d.e.f.g=1", ""]


@pytest.mark.parametrize("clause", ADMITTED)
def test_a_clause_the_pattern_admits_is_parsed(clause: str) -> None:
    assert re.fullmatch(WHERE_PATTERN, clause)
    parsed, problems = parse_where([clause])
    assert problems == []
    assert len(parsed) == 1


@pytest.mark.parametrize("clause", REFUSED)
def test_a_clause_parse_where_refuses_is_outside_the_pattern(clause: str) -> None:
    assert parse_where([clause])[1] != []
    assert re.fullmatch(WHERE_PATTERN, clause) is None
