"""bench/lab_scale.py on a small lab: it seeds, serves, times every read and ends with its one line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "lab_scale.py"
PG = os.environ.get("FEDGEN_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
LAST = re.compile(
    r"^200 runs: slowest read p95 \d+ ms \(.+\); pages not timed; \d+ bytes per round"
    r" \(seeded tables, not a real run\)$"
)


@pytest.mark.slow
@pytest.mark.postgres
def test_lab_scale_smoke_times_every_read_and_ends_with_its_line() -> None:
    """200 runs, 2 requests a read, no browser and no real run: every read answers (the bench
    raises on any error), the counts of the seeded lab show, and the last line is the summary."""
    # Execute
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--runs",
            "200",
            "--url",
            PG,
            "--requests",
            "2",
            "--no-pages",
            "--no-real-run",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    # Assert
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert LAST.match(lines[-1]), lines[-1]
    out = done.stdout
    assert re.search(r"^runs page 1 .* count 202$", out, re.M)  # 200 + the two templates
    assert re.search(r"^status=failed .* count 2$", out, re.M)  # runs 99 and 199
    assert re.search(r"^where=seed=3 .* count 20$", out, re.M)
    assert re.search(r"^sweep_id \(1,000 runs\) .* count 200$", out, re.M)
    assert "DELETE /runs/{id}:" in out
    assert re.search(r"database: [\d.]+ GB, [\d,]+ bytes per run", out)
