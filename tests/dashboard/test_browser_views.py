"""Views that show what was asked for, in headless Chromium: Compare, Live's picker, Paper.

One real lab (API, a `--slots 2` worker with Debian's Fashion-MNIST, the dashboard signed in
as the admin member `e2e`) and a second member, `bob`. Arranged through the API: a run that
fails (mnist from an empty data.root), e2e's seed sweep (FedAvg, seeds 0 and 1), then e2e's
newest sweep (FedAvg and FedProx, one seed each), then two runs of bob's (the lab's newest).

The walk:
- Compare with nothing chosen opens e2e's newest sweep (not the lab's newest runs, bob's among
  them) and says its one-run groups have no band ("n = 1: no band"); with the sweep cleared it
  says how to pick and draws nothing.
- Compare of the seed sweep under "No grouping": each run its own colour and dash.
- Submit's "Submit run" leads to Live on that run (after Live showed the failed run); once it
  has ended, a run bob queues afterwards appears in the picker, then as succeeded, without a
  reload (the picker follows the lab).
- Paper reopened on a launched study (`?study=table2&sweep=…`): that sweep's settings,
  read-only, no "Launch study" until "Launch again" is ticked, and a Cancel that asks first
  and cancels the sweep's queued and running runs.

Every page is saved as a PNG in FEDGEN_SCREENSHOTS (default: the test's tmp folder). No page
shows a Streamlit exception box; the dashboard logs no traceback.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import browse
from tests.support.browse import CHART, IDLE
from tests.support.needs import needs
from tests.support.stack import CHROMIUM, ROOT, browser_page, lab_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]
FASHION = Path("/usr/share/datasets/fashion-mnist")
FAST = {"FEDGEN_REAPER_S": "1", "FEDGEN_HEARTBEAT_S": "1"}  # hand-backs within a second
ENDED = ("succeeded", "failed", "cancelled")
STUDY_ROUNDS = 20  # long enough that some of the study's runs are still queued at its Cancel
SMALL = {
    "partition": {"num_users": 4},
    "users_per_round": 2,
    "rounds": 3,
    "local_steps": 2,
    "batch_size": 16,
}
TRACES = """() => {
  const plot = document.querySelectorAll('.js-plotly-plot')[0];
  if (!plot || !plot.data) return null;
  const title = ((plot.layout || {}).title || {}).text || '';
  return {title, traces: plot.data.map(t => ({
    name: t.name || '', fill: t.fill || '', color: (t.line || {}).color || '',
    dash: (t.line || {}).dash || 'solid', kind: (t.meta || {}).kind || '',
    run: (t.meta || {}).run_id || ''}))};
}"""


def _member(home: Path, name: str) -> str:
    """`fedgen-lab users create NAME` on the stack's lab (its environment); the token."""
    env = {**os.environ, "FEDGEN_HOME": str(home), "PYTHONPATH": str(ROOT)}
    env.pop("FEDGEN_DATABASE_URL", None)
    env.pop("FEDGEN_BROKER_URL", None)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from admin.cli import main; sys.exit(main())",
            "users",
            "create",
            name,
        ],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.stdout.strip().splitlines()[-1]


def _client(url: str, token: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.Client(base_url=url + "/api/v1", headers=headers, timeout=30)


def _sweep(api: httpx.Client, name: str, grid: dict[str, list[Any]]) -> dict[str, Any]:
    body = {"name": name, "base": SMALL, "grid": grid}
    return dict(api.post("/sweeps", json=body).raise_for_status().json())


def _run(api: httpx.Client, spec: dict[str, Any]) -> str:
    return str(api.post("/runs", json={"spec": spec}).raise_for_status().json()["id"])


def _wait(
    api: httpx.Client, ids: list[str], ok: tuple[str, ...] = ENDED, timeout: float = 300
) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        statuses = {i: str(api.get(f"/runs/{i}").json()["status"]) for i in ids}
        if all(s in ok for s in statuses.values()) or time.monotonic() > deadline:
            return statuses
        time.sleep(1)


def _picker_options(page: Any) -> list[str]:
    """The Live run picker's option texts (the list opened, read, closed).

    A run of the lab that starts or ends reruns the page with a new picker (its key follows
    its labels), which closes a list opened just before: opened again, up to three times."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in (1, 2, 3):
        page.locator(IDLE).wait_for(timeout=60_000)  # a rerun shows the old picker beside the new
        page.get_by_role("combobox", name="Run").last.click()
        try:
            page.get_by_role("option").first.wait_for(timeout=10_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
            if attempt == 3:
                raise
    options = [str(t).strip() for t in page.get_by_role("option").all_inner_texts()]
    page.keyboard.press("Escape")
    return options


def _compare(page: Any, base: str, shots: Path, seen: dict[str, Any], ids: dict[str, Any]) -> None:
    """Item 5: Compare with nothing chosen; then the sweep cleared. Item 6: No grouping."""
    browse.visit(page, base, "compare", CHART)
    browse.settle(page, CHART)
    seen["cmp_default_text"] = browse.flat(browse.main_text(page))
    seen["cmp_default_chart"] = page.evaluate(TRACES)
    seen["cmp_default_url"] = page.url
    browse.shot(page, shots, "compare-own-newest-sweep-n1")
    page.get_by_role("combobox", name="Take all runs of a sweep").click()
    page.get_by_role("option", name="—", exact=True).click()
    page.get_by_text("No runs chosen").wait_for(timeout=30_000)
    page.locator(IDLE).wait_for(timeout=30_000)
    seen["cmp_cleared_text"] = browse.flat(browse.main_text(page))
    seen["cmp_cleared_charts"] = page.locator(CHART).count()
    browse.shot(page, shots, "compare-nothing-chosen")
    browse.visit(page, base, f"compare&sweep={ids['seeds']}&group=none", CHART)
    browse.settle(page, CHART)
    seen["cmp_none_chart"] = page.evaluate(TRACES)
    browse.shot(page, shots, "compare-no-grouping-seeds")


def _live(
    page: Any,
    base: str,
    shots: Path,
    seen: dict[str, Any],
    ids: dict[str, Any],
    apis: dict[str, Any],
) -> None:
    """Item 7: Live on the failed run; Submit's run; Live follows the lab."""
    e2e, bob = apis["e2e"], apis["bob"]
    browse.visit(page, base, f"live&run={ids['bad']}", '[data-testid="stAlert"]')
    page.goto(f"{base}/?page=submit")
    page.get_by_role("heading", name="Submit").wait_for(timeout=60_000)
    page.locator(IDLE).wait_for(timeout=60_000)
    rounds = page.get_by_role("spinbutton", name="Rounds", exact=True)
    rounds.fill("2")
    rounds.press("Enter")
    page.locator(IDLE).wait_for(timeout=30_000)
    page.get_by_role("button", name="Submit run").click()
    queued = page.get_by_text(re.compile(r"^Queued run \S+\."))
    queued.wait_for(timeout=60_000)
    found = re.search(r"Queued run (\S+)\.", str(queued.inner_text()))
    assert found is not None
    new_id = found.group(1)
    ids["submitted"] = new_id
    page.get_by_role("link", name="Watch it on the Live run page").click()
    page.get_by_role("heading", name="Live run").wait_for(timeout=60_000)
    page.get_by_role("combobox", name="Run").wait_for(timeout=60_000)
    page.locator(IDLE).wait_for(timeout=60_000)
    seen["live_after_submit_url"] = page.url
    seen["live_after_submit_text"] = browse.flat(browse.main_text(page))
    picker = page.get_by_role("combobox", name="Run")
    # The chosen run as the box shows it (an input's value, or the text drawn in the box).
    seen["live_after_submit_picked"] = str(
        picker.evaluate("e => e.value || e.closest('[data-baseweb=\"select\"]').innerText")
    )
    browse.shot(page, shots, "live-opens-on-submitted-run")
    # The submitted run ends (a small default run, or cancelled when the worker is slow).
    if _wait(e2e, [new_id], timeout=120)[new_id] not in ENDED:
        e2e.post(f"/runs/{new_id}/cancel")
        _wait(e2e, [new_id], timeout=60)
    page.wait_for_timeout(4000)  # the page's own rerun for that end
    # Then bob queues a run, and it runs to its end: the page is never reloaded.
    later = _run(bob, {**SMALL, "seed": 7})
    ids["bob_later"] = later
    seen["later_status"] = _wait(bob, [later])[later]
    deadline = time.monotonic() + 30
    options: list[str] = []
    while time.monotonic() < deadline:
        options = _picker_options(page)
        if any(later[:8] in o and "succeeded" in o for o in options):
            break
        page.wait_for_timeout(2000)
    seen["live_options"] = options
    # A rerun keeps the old picker on screen beside the new one until it ends (its key follows
    # its labels): click once the script is idle and only one is left.
    page.locator(IDLE).wait_for(timeout=60_000)
    page.get_by_role("combobox", name="Run").last.click()
    page.get_by_role("option").first.wait_for(timeout=10_000)
    browse.shot(page, shots, "live-picker-follows-the-lab")
    page.keyboard.press("Escape")


def _paper(
    page: Any, base: str, shots: Path, seen: dict[str, Any], ids: dict[str, Any], e2e: Any
) -> None:
    """Item 8: a launched study reopened from its link: its settings, Cancel, Launch again."""
    sweep_id = ids["study"]
    browse.visit(page, base, f"paper&study=table2&sweep={sweep_id}", '[data-testid="stProgress"]')
    seen["paper_text"] = browse.flat(browse.main_text(page))
    seen["paper_launch_buttons"] = page.get_by_role("button", name="Launch study").count()
    seen["paper_url"] = page.url
    browse.shot(page, shots, "paper-launched-study-reopened")
    # Live of the failed run; the picker now lists runs queued, running, failed and finished.
    browse.visit(page, base, f"live&run={ids['bad']}", '[data-testid="stAlert"]')
    browse.shot(page, shots, "live-failed-run")
    newest = _study_runs(e2e, sweep_id)[0]["id"]
    browse.visit(page, base, f"live&run={newest}", '[data-testid="stProgress"]')
    page.get_by_role("combobox", name="Run").click()
    page.get_by_role("option").first.wait_for(timeout=10_000)
    browse.shot(page, shots, "live-picker-all-states")
    page.keyboard.press("Escape")
    browse.visit(page, base, f"paper&study=table2&sweep={sweep_id}", '[data-testid="stProgress"]')
    page.get_by_role("button", name=re.compile(r"^Cancel this sweep \(")).click()
    yes = page.get_by_role("button", name=re.compile(r"^Yes, cancel \d+ runs$"))
    yes.wait_for(timeout=30_000)
    seen["paper_confirm"] = browse.flat(browse.main_text(page))
    seen["study_before_yes"] = [r["status"] for r in _study_runs(e2e, sweep_id)]
    browse.shot(page, shots, "paper-cancel-asks-first")
    yes.click()
    # the page cancels run by run, then redraws the study table: slow beside a training test
    page.get_by_text(re.compile(r"^Asked \d+ runs to stop")).wait_for(timeout=120_000)
    seen["study_after"] = _wait(e2e, [r["id"] for r in _study_runs(e2e, sweep_id)], timeout=120)
    page.wait_for_timeout(4000)  # the progress's refresh
    page.locator(IDLE).wait_for(timeout=30_000)
    seen["paper_after_cancel"] = browse.flat(browse.main_text(page))
    browse.shot(page, shots, "paper-cancelled")
    page.get_by_text("Launch again", exact=False).click()
    page.get_by_role("button", name="Launch study").wait_for(timeout=30_000)
    seen["paper_again_launch"] = page.get_by_role("button", name="Launch study").count()
    browse.shot(page, shots, "paper-launch-again-form")


def _study_runs(api: httpx.Client, sweep_id: str) -> list[dict[str, Any]]:
    return list(api.get("/runs", params={"sweep_id": sweep_id}).json()["data"])


def _check_compare(seen: dict[str, Any], ids: dict[str, Any]) -> None:
    """Items 5 and 6."""
    # 5: nothing chosen -> e2e's newest sweep, its two runs only (no run of bob's, no split
    # seed pair), each a group of one: said in the legend and the title, no band drawn.
    assert f"sweep={ids['algos']}" in seen["cmp_default_url"], seen["cmp_default_url"]
    assert "All 2 runs of the sweep" in seen["cmp_default_text"], seen["cmp_default_text"]
    chart = seen["cmp_default_chart"]
    means = [t for t in chart["traces"] if t["kind"] == "mean"]
    assert len(means) == 2, chart
    assert all("n = 1: no band" in t["name"] for t in means), means
    assert not [t for t in chart["traces"] if t["fill"] not in ("", "none")], chart
    assert "n = 1: no band" in chart["title"], chart["title"]
    assert "mean ± std" not in chart["title"], chart["title"]
    # ... and cleared, it says how to pick and draws nothing.
    assert "Take all runs of a sweep above" in seen["cmp_cleared_text"]
    assert seen["cmp_cleared_charts"] == 0
    # 6: No grouping: the two seeds of one FedAvg spec in styles of their own.
    runs = [t for t in seen["cmp_none_chart"]["traces"] if t["kind"] == "run"]
    assert len(runs) == 2, seen["cmp_none_chart"]
    assert len({(t["color"], t["dash"]) for t in runs}) == 2, runs


def _check_live(seen: dict[str, Any], ids: dict[str, Any]) -> None:
    """Item 7."""
    new = ids["submitted"]
    assert f"run={new}" in seen["live_after_submit_url"], seen["live_after_submit_url"]
    assert new[:8] in seen["live_after_submit_picked"], seen["live_after_submit_picked"]
    assert ids["bad"][:8] not in seen["live_after_submit_picked"]
    later = ids["bob_later"]
    assert seen["later_status"] == "succeeded", seen["later_status"]
    listed = [o for o in seen["live_options"] if later[:8] in o]
    assert listed, seen["live_options"]
    assert "succeeded" in listed[0], seen["live_options"]
    assert not [o for o in seen["live_options"] if "running" in o], seen["live_options"]


def _check_paper(seen: dict[str, Any], ids: dict[str, Any]) -> None:
    """Item 8."""
    text = seen["paper_text"]
    assert (
        "This sweep's settings (read-only): dataset fashion-mnist · 1 seed · "
        f"{STUDY_ROUNDS} rounds · 6 runs" in text
    ), text
    assert seen["paper_launch_buttons"] == 0, text  # no launch of other settings on offer
    assert "Launch again" in text
    assert f"sweep={ids['study']}" in seen["paper_url"]
    assert "queued or running runs of" in seen["paper_confirm"], seen["paper_confirm"]
    assert any(s in ("queued", "running") for s in seen["study_before_yes"])
    after = seen["study_after"]
    assert all(s in ENDED for s in after.values()), after
    assert "cancelled" in after.values(), after
    cancelled = sum(s == "cancelled" for s in after.values())
    assert f"6/6 runs finished · {cancelled} cancelled" in seen["paper_after_cancel"]
    assert seen["paper_again_launch"] == 1


@pytest.mark.timeout(600)
def test_views_show_what_was_asked(tmp_path: Path) -> None:
    """Compare starts on the member's newest sweep and says n = 1; No grouping styles each run;
    Live opens on the submitted run and follows the lab; Paper shows a launched sweep."""
    needs(os.path.exists(CHROMIUM), f"Debian's chromium at {CHROMIUM}")
    needs(FASHION.is_dir(), f"Debian's Fashion-MNIST at {FASHION}")
    shots = Path(os.environ.get("FEDGEN_SCREENSHOTS") or tmp_path / "screens")
    (tmp_path / "no-mnist").mkdir()
    env = {**FAST, "FEDGEN_DATA_ROOTS": str(tmp_path)}  # the failing run's empty root inside
    args = ["--slots", "2", "--threads", "1"]
    seen: dict[str, Any] = {}
    raised: dict[str, list[str]] = {}
    with lab_stack(tmp_path / "home", worker_args=args, env_extra=env) as stack:
        e2e = _client(stack.api_url, stack.token)
        bob = _client(stack.api_url, _member(stack.home, "bob"))
        bad = {**SMALL, "data": {"name": "mnist", "root": str(tmp_path / "no-mnist")}}
        ids: dict[str, Any] = {"bad": _run(e2e, bad)}
        seeds = _sweep(e2e, "fedavg seeds", {"seed": [0, 1]})
        ids["seeds"] = seeds["id"]
        time.sleep(1.1)  # e2e's newest sweep is newer by its created_at
        algos = _sweep(e2e, "fedavg vs fedprox", {"algorithm": ["fedavg", "fedprox"]})
        ids["algos"] = algos["id"]
        bobs = [_run(bob, {**SMALL, "seed": s}) for s in (3, 4)]
        ended = _wait(e2e, [ids["bad"], *seeds["run_ids"], *algos["run_ids"], *bobs])
        base = stack.dashboard_url
        with browser_page(tmp_path / "profile", 1600, 1400) as page:
            _compare(page, base, shots, seen, ids)
            raised["compare"] = browse.exceptions(page)
            _live(page, base, shots, seen, ids, {"e2e": e2e, "bob": bob})
            raised["live"] = browse.exceptions(page)
            study = e2e.post(
                "/studies/table2",
                json={"dataset": "fashion-mnist", "seeds": 1, "rounds": STUDY_ROUNDS},
            ).raise_for_status()
            ids["study"] = study.json()["sweep"]["id"]
            _paper(page, base, shots, seen, ids, e2e)
            raised["paper"] = browse.exceptions(page)
        e2e.close()
        bob.close()
        tracebacks = browse.tracebacks(stack.home / "logs" / "dashboard.log")
    assert ended[ids["bad"]] == "failed", ended
    assert {ended[i] for i in ended if i != ids["bad"]} == {"succeeded"}, ended
    _check_compare(seen, ids)
    _check_live(seen, ids)
    _check_paper(seen, ids)
    assert {k: v for k, v in raised.items() if v} == {}
    assert tracebacks == []
