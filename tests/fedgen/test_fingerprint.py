"""Bit-for-bit fingerprint: a fixed small spec's 5-round metrics per algorithm and profile.

The fingerprints in `fingerprints.json` pin the CPU results of the code as it was after the
issue-11 refactor (which was itself checked against fingerprints written before it); a
change that moves any CPU result (a metric, a per-user accuracy, a loss) by one bit fails
here. Timings are excluded (they vary).

The last bits of float arithmetic depend on the CPU's kernels: torch picks AVX2 or AVX-512
code, oneDNN's convolutions pick theirs by ISA and cache sizes, MKL its own. On a new VM
(AVX-512) the same code gave other bits than on the VM the fingerprints were written on. So
they are computed in a child process with portable numerics (`PORTABLE_NUMERICS`: ATen's
scalar kernels, MKL's conditional-numerical-reproducibility path, oneDNN off, one thread),
where the CPU's features do not pick the kernels; a test checks that capping oneDNN's and
MKL's instruction sets leaves the bits as they are. Three cases (FedAdam, FedYogi, SCAFFOLD)
still give other last bits on Intel Xeon than on the AMD EPYC the file was written on, with
the same code (checked against the landed commit on both): `fingerprints-GenuineIntel.json`
pins those cases for Intel CPUs, and every other case is pinned once for both. Regenerate only
for an intended change of results:
`FEDGEN_WRITE_FINGERPRINTS=1 python -m pytest tests/fedgen/test_fingerprint.py`.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fedgen.events import MemorySink, RoundEvent
from fedgen.runner import run
from tests.support.fingerprint_cases import CASES
from tests.support.specs import tiny_spec

pytestmark = pytest.mark.slow  # real runs, in a child process

FILE = Path(__file__).with_name("fingerprints.json")


def _cpu_vendor() -> str:
    """The CPU's vendor id ('GenuineIntel', 'AuthenticAMD', ...) from /proc/cpuinfo, or ''."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""
    for line in text.splitlines():
        if line.startswith("vendor_id"):
            return line.split(":", 1)[1].strip()
    return ""


# Cases whose portable bits differ on this CPU vendor: {case: fingerprint} over FILE's.
VENDOR_FILE = Path(__file__).with_name(f"fingerprints-{_cpu_vendor() or 'unknown'}.json")
ROOT = Path(__file__).resolve().parents[2]

# Environment of the child process that computes the fingerprints: kernels chosen by none of
# the CPU's features (torch.backends.mkldnn is switched off inside the child, see _main).
PORTABLE_NUMERICS = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_CBWR": "COMPATIBLE",
    "MKL_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
}


def _round_record(event: RoundEvent) -> str:
    metrics = {k: v for k, v in event.metrics.items() if "_ms" not in k}
    users = [
        (u.user, u.test_acc, u.test_loss, u.num_test, u.selected, u.train_loss) for u in event.users
    ]
    return repr((event.round, sorted(metrics.items()), users))


def fingerprint(case: str) -> list[str]:
    """sha256 of each round's metrics and per-user results (round 0..5)."""
    sink = MemorySink()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # CPU reductions differ in the last bit with the thread count
    try:
        # The split's draws changed on purpose (issue 12: `partition.draws`); the fingerprint
        # pins the draws it was written with, so it still checks the refactor bit for bit.
        run(tiny_spec(rounds=5, partition={"draws": "fedgen"}, **CASES[case]), sink)
    finally:
        torch.set_num_threads(threads)
    return [hashlib.sha256(_round_record(e).encode()).hexdigest()[:32] for e in sink.events]


def _portable_fingerprints(
    cases: tuple[str, ...] = (), extra_env: dict[str, str] | None = None
) -> dict[str, list[str]]:
    """{case: fingerprint} (all cases when none named), computed by this module run as a child
    process with portable numerics, plus `extra_env`."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.fedgen.test_fingerprint", *cases],
        cwd=ROOT,
        env={**os.environ, **PORTABLE_NUMERICS, **(extra_env or {})},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, list[str]] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.fixture(scope="module")
def portable() -> dict[str, list[str]]:
    return _portable_fingerprints()


@pytest.mark.parametrize("case", sorted(CASES))
def test_fingerprint_unchanged(case: str, portable: dict[str, list[str]]) -> None:
    got = portable[case]
    vendor = json.loads(VENDOR_FILE.read_text()) if VENDOR_FILE.exists() else {}
    if os.environ.get("FEDGEN_WRITE_FINGERPRINTS"):
        target = VENDOR_FILE if case in vendor else FILE
        stored = json.loads(target.read_text()) if target.exists() else {}
        stored[case] = got
        target.write_text(json.dumps(dict(sorted(stored.items())), indent=1) + "\n")
        vendor = json.loads(VENDOR_FILE.read_text()) if VENDOR_FILE.exists() else {}
    want = vendor.get(case) or json.loads(FILE.read_text())[case]
    assert got == want, f"{case}: CPU results differ from the committed fingerprint"


def test_portable_numerics_ignore_the_cpu_features() -> None:
    """What a different CPU would change (oneDNN's and MKL's instruction sets) leaves the
    portable fingerprint as it is: the pin, not this machine, decides the bits."""
    case = ("fedavg-official",)
    base = _portable_fingerprints(case)
    for caps in ({"ONEDNN_MAX_CPU_ISA": "SSE41"}, {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}):
        assert _portable_fingerprints(case, caps) == base, caps


def _main(cases: list[str]) -> None:
    """Child process: print {case: fingerprint} as one JSON line (all cases when none named)."""
    torch.backends.mkldnn.enabled = False  # oneDNN's kernels depend on the ISA and cache sizes
    sys.stdout.write(json.dumps({c: fingerprint(c) for c in cases or sorted(CASES)}) + "\n")


if __name__ == "__main__":
    _main(sys.argv[1:])
