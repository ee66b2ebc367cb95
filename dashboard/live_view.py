"""Pure helpers of the Live page: SSE events to a metrics payload, and its charts.

Also where the run ran: its segments (the first start, then each resume) as a table and a
sentence, and why a queued run waits. And the run's state in words: the issue's states beyond
the stored status (claimed: running with no round stored yet; cancelling: running with a
cancel asked), the round a failed or cancelled run stopped at, and a worker's error split into
its message and its traceback. The files its data was read from (`data_files_frame`) and how
its clients trained (`execution_caption`).
Charts show accuracy in percent (as the tables do), times in seconds, and name their axes
in words with units. No Streamlit, no network.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dashboard import charts
from dashboard.lab_view import short_version
from dashboard.live_history import History
from dashboard.run_records import RunVersionsView
from dashboard.run_state import state, stopped_at
from dashboard.times import DASH, when
from fedgen import metric_names
from fedgen.resources import format_bytes
from fedgen.stats import format_acc, summarize_curve
from vocab.run_status import ACTIVE, RunStatus
from vocab.schemas.runs import (
    DataFile,
    RoundEventData,
    RunInfoPublic,
    RunPublic,
    Segment,
    StatusEventData,
)

# The charts and their lines come from the one declaration (fedgen.metric_names.LIVE_CHARTS
# and each metric's `chart`); the user spread chart's axis is the test accuracy's.
CHARTS = {c.key: c for c in metric_names.LIVE_CHARTS}
ACC_AXIS = metric_names.label("test_acc")


def events_payload(events: list[tuple[str, dict[str, Any]]]) -> History:
    """`round` events -> their rounds and metric columns (as GET /metrics)."""
    rows = [
        RoundEventData.model_validate(d) for name, d in events if name == "round" and "round" in d
    ]
    names = sorted({k for d in rows for k in d.metrics})
    return History(
        rounds=[d.round for d in rows],
        metrics={n: [d.metrics.get(n) for d in rows] for n in names},
    )


def last_status(events: list[tuple[str, dict[str, Any]]]) -> str | None:
    """The newest status the stream reported, or None."""
    statuses = [StatusEventData.model_validate(d).status for name, d in events if name == "status"]
    return statuses[-1] if statuses else None


def has_data(df: pd.DataFrame, chart: str) -> bool:
    """True when `df` holds a metric drawn on the Live chart `chart` (e.g. FedGen's)."""
    return any(m.key in df.columns for m in metric_names.on_chart(chart))


def live_chart(df: pd.DataFrame, chart: str, revision: str) -> go.Figure:
    """The Live chart `chart` as declared: its metrics' lines (accuracies in %), or with a
    `total` its stacked parts and the rest as "other", all × the chart's `scale`."""
    spec = CHARTS[chart]
    present = [m for m in metric_names.on_chart(chart) if m.key in df.columns]
    if spec.total:
        cols = [m.key for m in present] + ([spec.total] if spec.total in df.columns else [])
        part = df[["round", *cols]].copy()
        part[cols] = part[cols] * spec.scale
        names = {m.key: m.legend_name for m in present}
        return charts.stacked_parts(part, names, spec.total, spec.title, spec.axis, revision)
    part = df[["round"]].copy()
    for m in present:
        part[m.legend_name] = df[m.key] * (100.0 if m.percent else 1.0) * spec.scale
    lines = [m.legend_name for m in present]
    return charts.metric_lines(part, lines, spec.title, spec.axis, revision)


def user_spread_chart(band: pd.DataFrame, revision: str) -> go.Figure:
    """Per-user test accuracy (min-max band, mean, worst) in %."""
    scaled = band.copy()
    for col in ("min", "mean", "max"):
        if col in scaled:
            scaled[col] = scaled[col] * 100.0
    fig = charts.user_spread(scaled, revision)
    return fig.update_layout(yaxis_title=ACC_AXIS)


SEGMENT_COLUMNS = [
    "attempt",
    "host",
    "slot",
    "device",
    "rounds",
    "resumed from",
    "code version",
    "cpu capability",
    "torch threads",
    "started",
]


def _text(value: Any) -> str:
    return DASH if value is None or value == "" else str(value)


def rounds_text(segment: Segment) -> str:
    """`0–9`; `10` for a single round; `from 10 (none done yet)` before its first round."""
    start, last = segment.start_round, segment.last_round
    if last is None:
        return f"from {start} (none done yet)"
    return str(start) if last == start else f"{start}–{last}"


def resumed_text(segment: Segment) -> str:
    """`round 9's checkpoint`, or `fresh start`."""
    src = segment.resumed_from
    return "fresh start" if src is None else f"round {src}'s checkpoint"


def segments_frame(segments: list[Segment], now: datetime, tz: tzinfo) -> pd.DataFrame:
    """One row per segment (oldest first) with the columns the Live page shows."""
    rows = [
        {
            "attempt": _text(g.attempt),
            "host": _text(g.host),
            "slot": _text(g.slot or g.worker),
            "device": _text(g.device),
            "rounds": rounds_text(g),
            "resumed from": resumed_text(g),
            "code version": short_version(g.code_version),
            "cpu capability": _text(g.cpu_capability),
            "torch threads": _text(g.torch_threads),
            "started": when(g.started_at, now, tz),
        }
        for g in segments
    ]
    return pd.DataFrame(rows, columns=SEGMENT_COLUMNS)


def _where(segment: Segment) -> str:
    host, slot = segment.host, segment.slot
    if host and slot:
        return f"{host} ({slot})"
    return host or slot or segment.worker or "an unnamed worker"


def resume_caption(segments: list[Segment]) -> str | None:
    """`Resumed on w2 (cpu-slot1) from round 10's checkpoint.`; None for a run that never
    resumed. Says when the resumed code differs from the first segment's."""
    if len(segments) < 2:
        return None
    last = segments[-1]
    src = last.resumed_from
    how = "started again from round 0" if src is None else f"from round {src}'s checkpoint"
    times = "Resumed" if len(segments) == 2 else f"Resumed {len(segments) - 1} times, last"
    text = f"{times} on {_where(last)} {how}"
    before = segments[-2].last_round
    start = last.start_round
    if before is not None and before >= start:  # rounds done after the checkpoint
        again = str(start) if before == start else f"{start}–{before}"
        text += f" ({'round' if before == start else 'rounds'} {again} computed again)"
    text += "."
    codes = {g.code_version for g in segments if g.code_version}
    if len(codes) > 1:
        text += f" The code changed between segments ({len(codes)} versions)."
    return text


def numerics_note(versions: dict[str, Any] | None) -> str | None:
    """The API's `versions.numerics_changed` as a sentence; None when nothing changed."""
    parts = []
    for change in RunVersionsView.of(versions).numerics_changed:
        diffs = [
            f"{k.replace('_', ' ')} {_text(v[0])} → {_text(v[1])}"
            for k, v in change.changed().items()
            if isinstance(v, list | tuple) and len(v) == 2
        ]
        if diffs:
            parts.append(f"at round {change.round}: {', '.join(diffs)}")
    if not parts:
        return None
    return (
        f"Numerics changed on resume ({'; '.join(parts)}): the curve is not bit-for-bit the one "
        "an uninterrupted run would give."
    )


def cost_caption(run: RunPublic) -> str | None:
    """What the run cost (so far, while it runs): CPU seconds, peak memory, GPU peak, CUDA
    out-of-memory errors; None before anything was measured."""
    cpu, oom = run.cpu_s, run.oom_count
    parts = [f"{cpu:,.1f} CPU s"] if cpu is not None else []
    if run.peak_rss_bytes is not None:
        parts.append(f"peak memory {format_bytes(run.peak_rss_bytes)}")
    if run.gpu_peak_bytes is not None:
        parts.append(f"GPU peak {format_bytes(run.gpu_peak_bytes)}")
    if oom:
        parts.append(f"CUDA out of memory {oom} time{'s' if oom > 1 else ''}")
    if not parts:
        return None
    return ("Cost so far: " if run.status in ACTIVE else "Cost: ") + " · ".join(parts)


def execution_caption(info: RunInfoPublic) -> str | None:
    """How a round's clients trained, e.g. `Clients trained batched, 10 per computation ·
    auto: 2 CPU threads`; None before a worker recorded it."""
    if info.execution is None:
        return None
    how: str = info.execution
    if info.execution == "batched" and info.batch_clients:
        how += f", {info.batch_clients} per computation"
    why = f" · {info.execution_reason}" if info.execution_reason else ""
    return f"Clients trained {how}{why}"


def data_files_label(files: list[DataFile]) -> str:
    """The data files expander's title: `Data files: 4 read (30.9 MB)`."""
    total = sum(f.size for f in files)
    return f"Data files: {len(files)} read ({format_bytes(total)})"


def data_files_frame(files: list[DataFile]) -> pd.DataFrame:
    """What the run read (GET /runs/{id}/info `data_files`): one row per file (or folder of
    images), its root, its path under it, its size and sha256 (to compare with a copy's)."""
    rows = [
        {
            "path": f.path,
            "root": f.root,
            "size": format_bytes(f.size),
            "sha256": f.sha256,
        }
        for f in files
    ]
    return pd.DataFrame(rows, columns=["path", "root", "size", "sha256"])


def segments_label(segments: list[Segment]) -> str:
    """The segments expander's title: `Where it ran: w1 (cpu-slot0)` or `… 2 segments`."""
    if len(segments) == 1:
        return f"Where it ran: {_where(segments[0])}"
    hosts = list(dict.fromkeys(g.host or _where(g) for g in segments))
    return f"Where it ran: {len(segments)} segments on {', '.join(hosts)}"


def waiting_note(run: RunPublic) -> str | None:
    """Why no live worker takes the run, for a run that waits for one; else None."""
    reason = run.waiting_reason
    if not reason or run.status not in ACTIVE:
        return None
    return f"Waiting: {reason}. It starts when a worker that can run it is up (see the Lab page)."


def notice(run: RunPublic) -> str | None:
    """A notice the API left on a run that has not failed (e.g. handed back to the queue)."""
    return run.error if run.error and run.status != RunStatus.FAILED else None


def headline(run: RunPublic, status: str, current: int) -> str:
    """The progress bar's text for each state (`current`: the last round stored, -1 for none)."""
    rounds = run.rounds
    shown = run.model_copy(update={"current_round": current})
    name = state(shown, status)
    if name == RunStatus.QUEUED:
        pos = run.queue_position
        return f"queued · #{pos} in the queue" if pos is not None else "queued"
    if name == "claimed":
        who = run.worker
        return f"claimed{f' by {who}' if who else ''} · starting (no round stored yet)"
    if name == "cancelling":
        return f"cancelling · stops after its current round · round {current} of {rounds}"
    if name == RunStatus.RUNNING:
        return f"running · round {current} of {rounds}"
    if (
        name == RunStatus.SUCCEEDED
    ):  # its last round stored is R, as "round r of R" says while running
        return f"succeeded · round {rounds} of {rounds}"
    if name in (RunStatus.FAILED, RunStatus.CANCELLED):
        return f"{name} {stopped_at(shown)}"
    return f"{name} · round {max(current, 0)} of {rounds}"


def state_note(run: RunPublic, status: str, now: datetime, tz: tzinfo) -> str | None:
    """A sentence under the bar for the states that need one (failed: see `split_error`)."""
    name = state(run, status)
    if name == RunStatus.QUEUED:
        pos, start = run.queue_position, run.expected_start
        # A waiting_reason is said on its own (`waiting_note`): here only the queue's part.
        text = "Queued" if run.waiting_reason else "Queued: waiting for a free worker slot"
        if pos is not None:
            text += f" (#{pos} in the queue)"
        if start and not run.waiting_reason:
            text += f", expected to start {when(start, now, tz)}"
        return text + ". This page switches to the curves by itself when a worker takes it."
    if name == "claimed":
        return (
            "A worker took the run and is preparing it (loading the data, partitioning): "
            "round 0 is not stored yet."
        )
    if name == "cancelling":
        return "Cancel requested: the run stops after the round it is computing."
    return None  # cancelled, succeeded: the bar's text says it


def no_rounds_note(run: RunPublic, status: str) -> str:
    """Why the charts are empty, per state."""
    name = state(run, status)
    return {
        RunStatus.QUEUED: "No rounds yet: the run waits in the queue.",
        "claimed": "No rounds yet: the worker is preparing round 0.",
        RunStatus.RUNNING: "No rounds yet: round 0 is being computed.",
        "cancelling": "No rounds stored: the cancel takes effect before round 0.",
        RunStatus.FAILED: "No rounds stored: the run failed before round 0.",
        RunStatus.CANCELLED: "No rounds stored: the run was cancelled before round 0.",
    }.get(name, "No rounds stored.")


def gone_note(run_id: str) -> str:
    """A link names a run that no longer exists."""
    return (
        f"Run {run_id} no longer exists: it was deleted (or the link is wrong). "
        "Pick another run, or find it on the Runs page."
    )


def eval_timing(spec: dict[str, Any] | None) -> str:
    """The run's evaluation protocol (its fidelity profile's `eval_timing`); the default when
    the stored spec does not parse here (e.g. written by another version)."""
    try:
        from fedgen.fidelity import resolve
        from fedgen.spec import parse_spec

        return str(resolve(parse_spec(spec or {})).eval_timing)
    except Exception:  # a spec this code cannot read must not break the page
        return "after_aggregation"


# One way of counting rounds everywhere (docs/metrics.md, "How rounds are counted").
ROUND_HELP = (
    "Round r is the model after r aggregations; round 0 is the initial model, evaluated "
    "before any training. A run of R rounds stores rounds 0..R (R + 1 evaluations)."
)


def last_round(df: pd.DataFrame, rounds: int) -> str:
    """The last round stored, out of the run's rounds: `25 of 25` (a dash before round 0)."""
    if df.empty or "round" not in df:
        return "—"
    return f"{int(df['round'].max())} of {rounds}"


def figure_help(label: str, spec: dict[str, Any] | None, rounds: int) -> str | None:
    """What a finished run's final and best count: the rounds its protocol evaluates."""
    if label not in ("final", "best"):
        return None
    if eval_timing(spec) == "before_training":
        return (
            f"Over rounds 0..{max(rounds - 1, 0)}: under before_training (the official "
            f"protocol) round {rounds}, the model after the last aggregation, is stored but "
            f"not counted, so the final is @{max(rounds - 1, 0)} (docs/metrics.md)."
        )
    return f"Over rounds 0..{rounds} (after_aggregation: every stored round counts)."


def accuracy_figures(
    df: pd.DataFrame, spec: dict[str, Any] | None, rounds: int, finished: bool
) -> list[tuple[str, str]]:
    """(label, value) of the accuracy metrics: the latest round's, and final and best as the
    one meaning has them (fedgen.stats) once the run succeeded, best so far before."""
    if df.empty or "test_acc" not in df:
        return []
    curve = df.set_index("round")["test_acc"].astype(float)
    last = int(curve.index.max())
    # Index = round: a missing round (should not happen: rounds are stored 0..r) counts as NaN.
    accs = [float(curve.get(r, float("nan"))) for r in range(last + 1)]
    # In flight every stored round counts; a finished run's under its protocol (round R is
    # not evaluated under before_training).
    timing = eval_timing(spec) if finished else "after_aggregation"
    summary = summarize_curve(accs, timing, rounds if finished else None)
    if finished:  # the latest round may be one the protocol does not count: final and best
        return [
            ("final", format_acc(summary.final, summary.final_round, rounds)),
            ("best", format_acc(summary.best, summary.best_round, rounds)),
        ]
    return [
        (f"test accuracy, round {last}", format_acc(accs[-1])),
        ("best so far", format_acc(summary.best, summary.best_round)),
    ]
