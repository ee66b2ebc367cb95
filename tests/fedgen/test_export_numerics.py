"""`fedgen export`'s reproduce command: the worker's threads, and why it cannot repeat a run bit
for bit where that is so (the round-trip itself is in test_export.py)."""

from __future__ import annotations

from fedgen import export


def test_the_command_says_when_it_cannot_repeat_the_run_bit_for_bit() -> None:
    """Other CPU kernels, a GPU run, or numerics that changed on resume: the export says so."""
    here = {"torch": "2.14.1", "cpu_capability": "AVX2"}
    same = {"device": "cpu", "versions": {"torch": "2.14.1", "cpu_capability": "AVX2"}}
    assert export.not_bit_for_bit(same, here) == []
    other_cpu = {"device": "cpu", "versions": {"torch": "2.14.1", "cpu_capability": "AVX512"}}
    assert "AVX512" in export.not_bit_for_bit(other_cpu, here)[0]
    gpu = {"device": "cuda:0", "versions": {"torch": "2.14.1"}}
    assert "cuda:0" in export.not_bit_for_bit(gpu, here)[0]
    resumed = {"device": "cpu", "versions": {"numerics_changed": [{"round": 3}]}}
    assert "resumed" in export.not_bit_for_bit(resumed, here)[0]
    assert export.reproduce_command("r.yaml", "ab" * 16, {"torch_threads": "1"}).endswith(
        " --threads 1"
    )
