"""The API keeps its OpenAPI contract: Schemathesis, every check, against a live server.

The same run as `make contract` (scripts/contract.py: `fedgen-lab api` on a scratch
Postgres schema, a token from `fedgen-lab users create`), with fewer cases.
"""

from __future__ import annotations

import pytest
from sqlalchemy import text

from api.db import make_engine
from scripts import contract
from tests.needs import needs

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _postgres_up() -> bool:
    eng = make_engine(contract.PG_BASE, pool_size=1)
    try:
        with eng.connect() as c:
            c.execute(text("SELECT 1"))
        return True
    except Exception:
        return False
    finally:
        eng.dispose()


def test_schemathesis_finds_no_failure(capsys: pytest.CaptureFixture[str]) -> None:
    needs(_postgres_up(), f"PostgreSQL at {contract.PG_BASE}")
    rc = contract.main(
        ["--max-examples", "4", "--min-cases", "100", "--", "--phases", "examples,fuzzing"]
    )
    out = capsys.readouterr().out
    assert rc == 0, out[-6000:]
