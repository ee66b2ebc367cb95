"""The Lab page's pure helpers: GET /workers as rows, the summary line, code versions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dashboard import lab_view
from dashboard.times import zone
from tests.support.factories import public_run
from vocab.schemas.workers import WorkerDevice, WorkerPublic, WorkerRun, WorkersPublic

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _worker(name: str, host: str | None, **kw: object) -> WorkerPublic:
    fields = {
        "name": name,
        "host": host,
        "queues": ["cpu"],
        "slots": 1,
        "threads": 1,
        "devices": [{"kind": "cpu", "name": "AMD EPYC 7B13", "cores": 2}],
        "code_version": f"git:{COMMIT}",
        "datasets": ["fashion-mnist", "synthetic"],
        "started_at": (NOW - timedelta(hours=2, minutes=7)).isoformat(),
        "heartbeat_at": (NOW - timedelta(seconds=12)).isoformat(),
        "running": [],
    }
    return WorkerPublic.model_validate({**fields, **kw})


def _device(**fields: object) -> WorkerDevice:
    return WorkerDevice.model_validate(fields)


def test_code_version_keeps_12_chars_of_the_commit_and_dirty() -> None:
    """git: and src: keep their kind and +dirty; other values pass; None is a dash."""
    assert lab_view.short_version(f"git:{COMMIT}+dirty") == "git:0123456789ab+dirty"
    assert lab_view.short_version(f"git:{COMMIT}") == "git:0123456789ab"
    assert lab_view.short_version("src:fedcba9876543210") == "src:fedcba987654"
    assert lab_view.short_version("unknown") == "unknown"
    assert lab_view.short_version(None) == "—"


def test_devices_read_as_gpu_name_and_memory_or_cpu_model_and_cores() -> None:
    """A GPU shows its index, name and GiB; a CPU its model and cores; missing parts degrade."""
    gpu = _device(kind="cuda", index="0", name="NVIDIA H200", memory_bytes=150_000_000_000)
    assert lab_view.device_text(gpu) == "GPU 0: NVIDIA H200 · 140 GiB"
    assert lab_view.device_text(_device(kind="cuda", index="3")) == "GPU 3: unknown GPU"
    small = _device(kind="cuda", index="1", name="T4", memory_bytes=8 * 2**30 - 2**28)
    assert lab_view.device_text(small) == "GPU 1: T4 · 7.8 GiB"
    one_core = _device(kind="cpu", name="AMD EPYC", cores=1)
    assert lab_view.device_text(one_core) == "AMD EPYC · 1 core"
    assert lab_view.device_text(_device(kind="cpu")) == "CPU"
    two = [gpu, gpu.model_copy(update={"index": "1"})]
    assert (
        lab_view.devices_text(two) == "GPU 0: NVIDIA H200 · 140 GiB; GPU 1: NVIDIA H200 · 140 GiB"
    )
    assert lab_view.devices_text([]) == "—"


def test_rows_say_where_what_and_when() -> None:
    """One row per worker, sorted by host then slot (numbers as numbers), times relative."""
    # Prepare
    run = {
        "id": "3f2a1b9c-0000-4000-8000-000000000000",
        "algorithm": "FedGen",
        "dataset": "fashion-mnist",
        "current_round": 12,
        "rounds": 30,
    }
    workers = [
        _worker("cpu-slot10@w1", "w1"),
        _worker("cpu-slot2@w1", "w1", running=[run], code_version=f"git:{COMMIT}+dirty"),
        _worker("gpu-slot0@a0", None, datasets=None, threads=None, queues=["lab-gpu"]),
    ]
    # Execute
    df = lab_view.table(workers, NOW, zone("Europe/Berlin"))
    # Assert
    assert list(df["slot"]) == ["gpu-slot0", "cpu-slot2", "cpu-slot10"]
    assert list(df["host"]) == ["a0", "w1", "w1"]  # no host: the node name's
    first, busy = df.iloc[0], df.iloc[1]
    assert first["datasets"] == "all (not reported)"
    assert first["threads"] == "—"
    assert first["queues"] == "gpu"  # the kind of runs, not the broker's "lab-gpu"
    assert busy["running"] == "3f2a1b9c FedGen · FMNIST · round 12/30"
    assert busy["code version"] == "git:0123456789ab+dirty"
    assert busy["datasets"] == "fashion-mnist, synthetic"
    assert busy["devices"] == "AMD EPYC 7B13 · 2 cores"
    assert busy["started"] == "2 h 07 min ago (10:53)"
    assert busy["heartbeat"] == "12 s ago"
    assert df.iloc[2]["running"] == "idle"
    assert list(df.columns) == lab_view.TABLE_COLUMNS


def test_summary_line_counts_workers_hosts_and_slots() -> None:
    """`N workers · S slots on H hosts, busy/slots slots busy`, singular when one; the slot
    processes of one `fedgen-lab worker --slots N` (`<name>-slot<i>@host`) are one worker."""
    three = [_worker("a@w1", "w1"), _worker("b@w1", "w1"), _worker("c@w2", "w2")]
    two_hosts = WorkersPublic(workers=three, slots=3, busy=1)
    assert lab_view.summary(two_hosts) == "3 workers · 3 slots on 2 hosts, 1/3 slots busy"
    one = WorkersPublic(workers=[_worker("a@w1", "w1", slots=2)], slots=2, busy=0)
    assert lab_view.summary(one) == "1 worker · 2 slots on 1 host, 0/2 slots busy"
    slots = [_worker("cpu-slot0@w1", "w1"), _worker("cpu-slot1@w1", "w1")]
    two_slots = WorkersPublic(workers=slots, slots=2, busy=1)
    assert lab_view.summary(two_slots) == "1 worker · 2 slots on 1 host, 1/2 slots busy"


def test_versions_line_names_every_code_version_in_full() -> None:
    """One version: a sentence with it in full; several: which workers run which."""
    same = [_worker("a@w1", "w1"), _worker("b@w2", "w2")]
    assert lab_view.versions_line(same) == f"Every worker runs `git:{COMMIT}`."
    mixed = [*same, _worker("c@w2", "w2", code_version="src:fedcba9876543210")]
    line = lab_view.versions_line(mixed)
    assert line is not None
    assert line.startswith(f"The workers run 2 code versions: `git:{COMMIT}` on w1/a, w2/b; ")
    assert "`src:fedcba9876543210` on w2/c" in line
    assert lab_view.versions_line([]) is None


def test_running_and_waiting_runs() -> None:
    """The runs the workers hold, in table order; the runs with a waiting reason."""
    bare = {"algorithm": "", "dataset": "", "current_round": 0, "rounds": 3}
    r1, r2 = WorkerRun(id="r1", **bare), WorkerRun(id="r2", **bare)
    workers = [_worker("b@w2", "w2", running=[r2]), _worker("a@w1", "w1", running=[r1])]
    assert [r.id for _, r in lab_view.running_runs(workers)] == ["r1", "r2"]
    assert lab_view.run_text(r1) == "r1 round 0/3"
    waits = public_run(id="q1", waiting_reason="no live worker serves the cpu queue")
    runs = [waits, public_run(id="q2")]
    assert [r.id for r in lab_view.waiting_runs(runs)] == ["q1"]
