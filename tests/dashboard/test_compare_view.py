"""Compare page logic: run names, colour by algorithm, dash by α, CSV in both modes, legend place."""

from __future__ import annotations

import io

import pandas as pd

from dashboard import charts, run_name
from dashboard.compare_page import compare_view
from dashboard.compare_page.curves import aggregate, group_labels
from tests.support.factories import public_run
from vocab.run_status import RunStatus
from vocab.schemas.results import ComparePublic, CompareRun
from vocab.schemas.runs import RunPublic


def _run(rid: str, alg: str, alpha: float, seed: int) -> RunPublic:
    spec = {
        "algorithm": {"name": alg},
        "data": {"name": "fashion-mnist"},
        "partition": {"alpha": alpha, "num_users": 20},
        "seed": seed,
        "rounds": 3,
    }
    return public_run(id=rid, spec=spec, status="succeeded")


RUNS = [
    _run(f"r{i}", alg, alpha, seed)
    for i, (alg, alpha, seed) in enumerate(
        (a, al, s) for a in ("fedavg", "fedgen") for al in (0.1, 1.0) for s in (0, 1)
    )
]


def _long(runs: list[RunPublic]) -> pd.DataFrame:
    rows = [
        {"run_id": r.id, "round": k, "value": 0.1 * k + 0.01 * i, "wall_s": 2.0 * k}
        for i, r in enumerate(runs)
        for k in range(3)
    ]
    return pd.DataFrame(rows)


def test_colour_by_algorithm_is_stable_across_alpha_and_selection() -> None:
    """FedGen has one colour at every α, in any selection; α picks the dash."""
    # Prepare
    groups = group_labels(RUNS)
    only_fedgen = [r for r in RUNS if r.spec["algorithm"]["name"] == "fedgen"]
    # Execute
    styles = compare_view.trace_styles(RUNS, groups)
    alone = compare_view.trace_styles(only_fedgen, group_labels(only_fedgen))
    # Assert
    fedgen = compare_view.algorithm_color("fedgen")
    assert fedgen != compare_view.algorithm_color("fedavg")
    assert styles["algorithm=fedgen, alpha=0.1"].color == fedgen
    assert styles["algorithm=fedgen, alpha=1"].color == fedgen
    assert {s.color for s in alone.values()} == {fedgen}
    assert styles["algorithm=fedavg, alpha=0.1"].dash == styles["algorithm=fedgen, alpha=0.1"].dash
    assert styles["algorithm=fedgen, alpha=0.1"].dash != styles["algorithm=fedgen, alpha=1"].dash


def test_ungrouped_names_are_the_run_display_names() -> None:
    """One legend entry per run, named as every page names it (`run_name.compact_names`):
    the algorithm's label, the dataset, what differs and the seed; no uuid."""
    # Execute
    labels = run_name.compact_names([*RUNS, RUNS[0].model_copy(update={"id": "dup"})])
    # Assert
    assert labels["r0"] == "FedAvg · FMNIST · α=0.1 · s0"
    assert labels["r7"] == "FedGen · FMNIST · α=1 · s1"  # what differs, and the seed
    assert labels["dup"] == "FedAvg · FMNIST · α=0.1 · s0 #2"
    assert len(set(labels.values())) == len(RUNS) + 1


def test_csv_in_both_modes() -> None:
    """Grouped: mean ± std per group and round; ungrouped: every run's curve, named."""
    # Prepare
    long = _long(RUNS)
    groups = group_labels(RUNS)
    long["group"] = long["run_id"].map(groups)
    names = run_name.compact_names(RUNS)
    # Execute
    grouped = pd.read_csv(io.StringIO(compare_view.grouped_csv(aggregate(long))))
    ungrouped = pd.read_csv(io.StringIO(compare_view.runs_csv(long, names, "test_acc")))
    # Assert
    assert list(grouped.columns) == ["group", "round", "mean", "std", "n", "wall_s"]
    assert len(grouped) == 4 * 3
    assert set(grouped["n"]) == {2}
    row = grouped[(grouped["group"] == "algorithm=fedavg, alpha=0.1") & (grouped["round"] == 2)]
    assert row["mean"].iloc[0] == (0.2 + 0.2 + 0.01) / 2
    assert list(ungrouped.columns) == ["run", "run_id", "round", "test_acc", "wall_s"]
    assert len(ungrouped) == len(RUNS) * 3
    assert "FedGen · FMNIST · α=1 · s1" in set(ungrouped["run"])


def test_legend_outside_the_plot_area_and_styles_applied() -> None:
    """Legend right of the plot (x > 1, anchored left), title clear; log y; colours from styles."""
    # Prepare
    long = _long(RUNS)
    groups = group_labels(RUNS)
    long["group"] = long["run_id"].map(groups)
    styles = compare_view.trace_styles(RUNS, groups)
    names = run_name.compact_names(RUNS)
    # Execute
    band = charts.band_chart(aggregate(long), "t", styles=styles, log_y=True)
    lines = charts.run_lines(long, names, "t", styles=compare_view.trace_styles(RUNS, names))
    # Assert
    for fig in (band, lines):
        assert fig.layout.legend.x > 1
        assert fig.layout.legend.xanchor == "left"
        assert fig.layout.legend.orientation == "v"
        assert fig.layout.legend.y <= 1
        assert fig.layout.legend.yanchor == "top"
    assert band.layout.yaxis.type == "log"
    mean_lines = [t for t in band.data if t.fill != "toself"]
    fedgen = [t for t in mean_lines if t.name.startswith("algorithm=fedgen")]
    assert {t.line.color for t in fedgen} == {compare_view.algorithm_color("fedgen")}
    assert len(lines.data) == len(RUNS)
    assert lines.data[0].name == "FedAvg · FMNIST · α=0.1 · s0"


def _compare_run(rid: str, status: str, rounds: list[int]) -> CompareRun:
    """One run of a GET /compare answer with test_acc = round / 100."""
    return CompareRun(
        id=rid,
        status=RunStatus(status),
        owner="alice",
        algorithm="fedavg",
        dataset="mnist",
        spec_hash="h",
        sweep_id=None,
        seed=0,
        alpha=0.1,
        tags=[],
        current_round=rounds[-1] if rounds else -1,
        rounds_total=10,
        last_acc=None,
        best_acc=None,
        rounds=rounds,
        metrics={"test_acc": [r / 100 for r in rounds]},
        min=None,
        max=None,
        downsampled=False,
    )


def _payload(*runs: tuple[str, str, list[int]]) -> ComparePublic:
    """A GET /compare answer: (id, status, rounds) per run."""
    return ComparePublic(runs=[_compare_run(*run) for run in runs])


def test_fetch_plan_asks_only_runs_in_flight_for_their_new_rounds() -> None:
    """New and roundless runs whole; running ones after the lowest last round; ended never."""
    # Prepare
    cache: dict[str, compare_view.CachedRun] = {}
    compare_view.merge_compare(
        cache,
        _payload(
            ("done", "succeeded", [0, 1, 2]),
            ("slow", "running", [0, 1]),
            ("fast", "running", [0, 1, 2, 3]),
            ("q", "queued", []),
        ),
    )
    # Execute
    plan = compare_view.fetch_plan(cache, ["done", "slow", "fast", "q", "new"])
    # Assert
    assert plan == [(["q", "new"], -1), (["slow", "fast"], 1)]
    assert compare_view.fetch_plan(cache, ["done"]) == []


def test_merge_compare_appends_new_rounds_once_and_takes_the_status() -> None:
    """Rounds another run needed are sent again: each (run, round) is kept once, in order."""
    # Prepare
    cache: dict[str, compare_view.CachedRun] = {}
    compare_view.merge_compare(cache, _payload(("a", "running", [0, 1, 2]), ("b", "running", [0])))
    # Execute: since_round=0 for both (b was behind): a's rounds 1 and 2 come again
    compare_view.merge_compare(
        cache, _payload(("a", "succeeded", [1, 2, 3, 4]), ("b", "running", [1]))
    )
    # Assert
    assert cache["a"].rounds == [0, 1, 2, 3, 4]
    assert cache["a"].metrics["test_acc"] == [0.0, 0.01, 0.02, 0.03, 0.04]
    assert cache["a"].status == "succeeded"
    assert cache["b"].rounds == [0, 1]
    assert cache["b"].current_round == 1


def test_merge_compare_backfills_a_metric_that_appears_later() -> None:
    """Every metric list stays as long as the rounds."""
    # Prepare
    cache: dict[str, compare_view.CachedRun] = {}
    compare_view.merge_compare(cache, _payload(("a", "running", [0, 1])))
    later = _payload(("a", "running", [2]))
    later.runs[0].metrics["time_total_ms"] = [5.0]
    # Execute
    compare_view.merge_compare(cache, later)
    # Assert
    assert cache["a"].metrics["time_total_ms"] == [None, None, 5.0]
    assert len(cache["a"].metrics["test_acc"]) == 3


def test_refresh_cache_fetches_incrementally_until_every_run_ended() -> None:
    """Whole fetch first (downsampled), then since_round for runs in flight only, then none."""
    # Prepare: the server's truth, advanced between refreshes
    truth = {
        "done": ("succeeded", list(range(6))),
        "live": ("running", [0, 1]),
        "q": ("queued", []),
        "gone": ("running", [0]),
    }
    calls: list[tuple[list[str], int, int]] = []

    def fetch(ids: list[str], since: int, points: int) -> ComparePublic:
        calls.append((list(ids), since, points))
        runs = [(i, truth[i][0], [r for r in truth[i][1] if r > since]) for i in ids if i in truth]
        return _payload(*runs)

    cache: dict[str, compare_view.CachedRun] = {}
    ids = ["done", "live", "q", "gone"]
    # Execute
    compare_view.refresh_cache(cache, ids, fetch, 500)
    truth["live"] = ("running", [0, 1, 2, 3])
    truth["q"] = ("running", [0])
    del truth["gone"]  # deleted meanwhile
    compare_view.refresh_cache(cache, ids, fetch, 500)
    truth["live"] = ("succeeded", [0, 1, 2, 3, 4])
    truth["q"] = ("failed", [0])
    compare_view.refresh_cache(cache, ids, fetch, 500)
    last = compare_view.refresh_cache(cache, ids, fetch, 500)
    # Assert
    assert calls[0] == (ids, -1, 500)
    assert calls[1:3] == [(["q"], -1, 500), (["live", "gone"], 0, 0)]
    assert calls[3:] == [(["live", "q"], 0, 0)]
    assert last == 0  # every run ended: nothing asked
    assert cache["live"].rounds == [0, 1, 2, 3, 4]
    assert (cache["gone"].gone, cache["gone"].status) == (True, RunStatus.CANCELLED)
    assert not any(cache[i].gone for i in ("done", "live", "q"))
    assert {i: cache[i].status for i in ("done", "live", "q")} == {
        "done": "succeeded",
        "live": "succeeded",
        "q": "failed",
    }


def test_a_run_the_server_no_longer_lists_keeps_its_end_state_or_is_cancelled() -> None:
    """A run gone from GET /compare is in the trash: an ended run keeps its end state; one that
    had not ended (or was never fetched) was cancelled by its deletion, as GET /trash lists it."""
    # Prepare
    last = [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.RUNNING, RunStatus.QUEUED, None]
    # Execute
    got = [compare_view.gone_status(s) for s in last]
    # Assert
    assert got == [
        RunStatus.SUCCEEDED,
        RunStatus.FAILED,
        RunStatus.CANCELLED,
        RunStatus.CANCELLED,
        RunStatus.CANCELLED,
    ]
    assert not compare_view.in_flight(got[2])


def test_running_heads_legend_and_stopped_rows() -> None:
    """Running runs get a latest-point marker; groups say "2 of 3 running"; failed apart."""
    # Prepare
    runs = RUNS[:4]
    names = group_labels(runs)
    run_names = run_name.compact_names(runs)
    styles = compare_view.trace_styles(runs, names)
    long = _long(runs)
    statuses = {"r0": "running", "r1": "succeeded", "r2": "failed", "r3": "queued"}
    long = long[long["run_id"] != "r3"]  # queued: no rounds
    cache = {"r0": compare_view.CachedRun("r0", rounds_total=3)}
    # Execute
    heads = compare_view.running_heads(long, statuses, run_names, styles, names, cache)
    counts = compare_view.status_counts(statuses, names)
    stopped = compare_view.stopped_rows(long, statuses, run_names)
    legend = compare_view.group_legend(names["r0"], 2, counts[names["r0"]])
    # Assert
    assert heads["run_id"].tolist() == ["r0"]
    assert heads.iloc[0]["round"] == 2
    assert heads.iloc[0]["color"] == styles[names["r0"]].color
    assert legend == f"{names['r0']} (n=2, 1 of 2 running)"
    assert compare_view.group_legend("g", 3, compare_view.CurveCounts(runs=3)) == "g (n=3)"
    assert counts[names["r3"]].queued == 1
    assert set(stopped["run_id"]) == {"r2"}
    assert set(stopped["status"]) == {"failed"}
    fig = charts.band_chart(
        aggregate(
            long.assign(group=long["run_id"].map(names), status=long["run_id"].map(statuses))
        ),
        "t",
        heads=heads,
        stopped=stopped.assign(group=stopped["run_id"].map(names)),
    )
    kinds = [t.meta["kind"] for t in fig.data if t.meta]
    assert kinds.count("running") == 1
    assert kinds.count("stopped") == 1
    (marker,) = [t for t in fig.data if t.meta and t.meta["kind"] == "running"]
    assert marker.meta["rounds"] == {"r0": 2}
    assert "running" in marker.hovertext[0]


def test_final_mark_only_where_final_is_not_the_last_round() -> None:
    """Official protocol: a dotted line at R-1 once a curve reached it; none on wall-clock."""
    # Prepare
    official = compare_view.final_round({"rounds": 2})
    paper = compare_view.final_round({"rounds": 2, "fidelity": {"profile": "paper"}})
    long = _long(RUNS[:1])  # rounds 0..2
    # Execute
    mark = compare_view.final_marks({"a": official}, long, "round")
    # Assert
    assert official == (1, 2)
    assert paper == (2, 2)  # evaluated after the last aggregation: the final is round R
    assert mark == [(1.0, "final @1")]
    assert compare_view.final_marks({"a": official}, long, "wall_s") == []
    assert compare_view.final_marks({"a": official}, long[long["round"] == 0], "round") == []
    assert compare_view.final_marks({"a": (2, 2)}, long, "round") == []


def test_mean_at_common_round_compares_groups_where_both_are() -> None:
    """A group that ran further is compared at the other's last round, not its own."""
    agg = pd.DataFrame(
        {
            "group": ["a", "a", "a", "b", "b"],
            "round": [0, 1, 2, 0, 1],
            "mean": [10.0, 20.0, 90.0, 15.0, 25.0],
        }
    )
    assert compare_view.mean_at_common_round(agg) == {"a": 20.0, "b": 25.0}
    assert compare_view.mean_at_common_round(agg.iloc[:0]) == {}
