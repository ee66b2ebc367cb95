"""The difference line the Compare page shows (pure formatting of GET /difference), and the
Compare page's difference block against the real API (the last test)."""

from __future__ import annotations

from typing import Any

from dashboard.compare_page.difference import (
    default_pair,
    format_difference,
    format_p,
    round_note,
    short_name,
)
from tests.support.dashboard_lab import Lab
from vocab.schemas.analysis import Difference


def _difference(**fields: Any) -> Difference:
    """GET /difference's answer: FedGen 3 runs vs FedAvg 3 runs, final at R; `fields` override."""
    body: dict[str, Any] = {
        "statistic": "final",
        "round": 200,
        "last_round": 200,
        "statistic_label": "final",
        "unit": "%",
        "mean_a": 0.8,
        "mean_b": 0.76,
        "std_a": 0.01,
        "std_b": 0.01,
        "diff": 0.04,
        "n_a": 3,
        "n_b": 3,
        "level": 0.95,
        "se": 0.01,
        "df": 4.0,
        "t": 4.0,
        "p_value": 0.01,
        "ci": [0.02, 0.06],
        "values_a": [0.8] * 3,
        "values_b": [0.76] * 3,
        "run_ids_a": ["a1", "a2", "a3"],
        "run_ids_b": ["b1", "b2", "b3"],
        "label_a": "algorithm=fedgen",
        "label_b": "algorithm=fedavg",
        "differs_in": ["algorithm.name"],
        "swapped": False,
        "warnings": [],
    }
    return Difference.model_validate({**body, **fields})


def test_format_difference_reads_as_the_issue_asks() -> None:
    """Fractions become points with a sign, the CI in brackets, p and both n."""
    d = _difference(diff=0.039, ci=[0.021, 0.056], p_value=0.00312)
    assert format_difference(d) == "FedGen − FedAvg: +3.9 points [2.1, 5.6], p = 0.003, n = 3 vs 3"


def test_format_difference_negative_small_p_and_names() -> None:
    """A negative difference keeps its sign; tiny p reads "< 0.001"; names can be given."""
    d = _difference(diff=-0.1, ci=[-0.15, -0.05], p_value=1e-6, n_a=4, n_b=2)
    assert format_difference(d, "α=0.1", "α=1") == (
        "α=0.1 − α=1: -10.0 points [-15.0, -5.0], p < 0.001, n = 4 vs 2"
    )
    assert format_p(None) == "p n/a"
    assert short_name("algorithm=fedgen, alpha=0.1") == "algorithm=fedgen, alpha=0.1"


def test_default_pair_puts_the_better_group_first() -> None:
    """The server's better_first answer decides the default order of the first two groups."""
    labels = ["algorithm=fedavg", "algorithm=fedgen", "algorithm=fedprox"]
    assert default_pair(labels, swapped=False) == ("algorithm=fedavg", "algorithm=fedgen")
    assert default_pair(labels, swapped=True) == ("algorithm=fedgen", "algorithm=fedavg")


def test_round_note_names_the_final_round_only_when_it_is_not_the_last() -> None:
    """Official protocol: "Final @199 ... round 200"; after_aggregation or best: nothing."""
    note = round_note(_difference(round=199, last_round=200))
    assert "Final @199" in note
    assert "round 200" in note
    assert round_note(_difference(round=200, last_round=200)) == ""
    assert round_note(_difference(round=None, last_round=200)) == ""


def test_default_pair_falls_back_to_the_chart_mid_sweep() -> None:
    """With no server verdict yet (too few finished runs), the chart's leader comes first."""
    labels = ["algorithm=fedavg", "algorithm=fedgen"]
    hint = {"algorithm=fedavg": 30.0, "algorithm=fedgen": 80.0}
    assert default_pair(labels, None, hint) == ("algorithm=fedgen", "algorithm=fedavg")
    assert default_pair(labels, False, hint) == ("algorithm=fedavg", "algorithm=fedgen")
    assert default_pair(labels, None) == ("algorithm=fedavg", "algorithm=fedgen")


def test_the_servers_sides_are_named_by_the_groups_sent() -> None:
    """A 409 names sides 'a'/'b'; the page says which group each is (it may show them swapped)."""
    from dashboard.compare_page.difference import name_sides

    message = "a: needs at least 2 finished runs, has 0; b: needs at least 2 finished runs, has 1"
    named = name_sides(message, "algorithm=fedavg", "algorithm=fedgen")
    assert named == (
        "algorithm=fedavg: needs at least 2 finished runs, has 0; "
        "algorithm=fedgen: needs at least 2 finished runs, has 1"
    )


def test_picked_groups_give_the_difference_as_named(
    app_path: str, lab_env: dict[str, Any], lab: Lab
) -> None:
    """Groups picked by hand are sent as named (order=given): the worse group first gives a
    negative difference, the server's a − b."""
    from tests.support.apptest import open_page

    # Prepare
    ids = lab_env["run_ids"]
    at = open_page(app_path, "app_pages/compare.py", {"compare_ids": ids})
    first, second = at.selectbox(key="cmp_diff_a").value, at.selectbox(key="cmp_diff_b").value
    with lab.client() as c:
        runs = [c.get(f"/runs/{i}").json() for i in ids]
        by = {r["id"]: r["spec"]["algorithm"]["name"] for r in runs}
        side = {f"algorithm={name}": [i for i in ids if by[i] == name] for name in set(by.values())}
        want = c.get(
            "/difference",
            params={"a": ",".join(side[second]), "b": ",".join(side[first]), "statistic": "final"},
        ).json()
    # Execute: the default (better first) turned round by hand
    at.selectbox(key="cmp_diff_a").set_value(second)
    at.selectbox(key="cmp_diff_b").set_value(first).run()
    # Assert
    assert not at.exception
    shown = "\n".join(m.value for m in at.markdown)
    assert want["diff"] < 0
    assert f"{short_name(second)} − {short_name(first)}: {100 * want['diff']:+.1f} points" in shown
