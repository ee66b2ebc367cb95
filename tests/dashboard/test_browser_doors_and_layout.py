"""The Runs, Trash, Settings and Submit pages at 1,280 px in headless Chromium: what they show
is what applies, nothing essential is off-screen or cut, and every door asks or can be undone.

One real lab (API + dashboard, no worker) with runs queued, running (its worker gone after
round 2), failed (in round 2) and finished (a two-seed sweep posted to POST /sweeps), run by
the worker's own `execute_run` with the shared fake runner. The walk:

- every tab is titled by its page (`Runs · FedGen Lab`);
- Runs: "Per page" shows the 100 that applies, no widget label is cut, the owner and id
  columns are on screen, a ticked run shows its `fedgen export <short id>` command with a copy
  button; a delete asks first, then offers Undo (which restores the run) and the Trash;
- Trash: a restore says what came back, links to it and offers Undo (back to the Trash);
- Settings: nothing is preselected for revoking, the token this browser uses is marked
  ("this browser") in the picker and the table, and revoking it asks first, saying that it
  signs this browser out;
- Submit: the Single run / Sweep switch keeps what was typed; the Note says every member
  reads it.

Every page is saved as a PNG in FEDGEN_SCREENSHOTS (default: the test's tmp folder).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import browse
from tests.support.browse import IDLE, TABLE
from tests.support.dashboard_lab import tiny_spec
from tests.support.fakes import die_after
from tests.support.needs import needs
from tests.support.stack import CHROMIUM, Stack, browser_page, execute_here, lab_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]
WIDTH, HEIGHT = 1280, 1000
# Widgets whose text does not fit their box (an ellipsis, or text past the edge): the labels,
# and the value a select box shows.
CUT = """() => {
  const leaves = (root) => [...root.querySelectorAll('*')].filter(
    (e) => e.children.length === 0 && e.textContent.trim() && e.offsetParent !== null);
  const cut = [];
  const boxes = [
    ...document.querySelectorAll('[data-testid="stWidgetLabel"]'),
    ...document.querySelectorAll('[data-testid="stSelectbox"]'),
  ];
  for (const box of boxes) {
    for (const el of leaves(box)) {
      if (el.scrollWidth > el.clientWidth + 1) cut.push(el.textContent.trim());
    }
  }
  return cut;
}"""
PER_PAGE = """() => {
  const label = [...document.querySelectorAll('[data-testid="stWidgetLabel"]')]
    .find((l) => l.textContent.trim() === 'Per page');
  const box = label && label.closest('[data-testid="stSelectbox"]');
  if (!box) return null;
  const leaves = [...box.querySelectorAll('*')].filter(
    (e) => e.children.length === 0 && e.textContent.trim() &&
      !e.closest('[data-testid="stWidgetLabel"]'));
  const input = box.querySelector('input');
  const typed = input && input.value ? [input.value] : [];
  return {text: [...typed, ...leaves.map((e) => e.textContent.trim())].join(' '),
          cut: leaves.some((e) => e.scrollWidth > e.clientWidth + 1),
          width: box.getBoundingClientRect().width};
}"""


def _arrange(stack: Stack, c: httpx.Client) -> dict[str, Any]:
    """Runs in every state: state -> run id; "sweep" -> the POST /sweeps answer."""
    from tests.support.fakes import FakeRunner

    sweep = c.post(
        "/sweeps", json={"name": "seeds", "base": tiny_spec(rounds=4), "grid": {"seed": [0, 1]}}
    ).raise_for_status()
    ids: dict[str, Any] = {"sweep": sweep.json()}
    for rid in sweep.json()["run_ids"]:
        assert execute_here(stack, rid, FakeRunner()) == "succeeded"
    ids["succeeded"] = sweep.json()["run_ids"][0]

    def submit(seed: int) -> str:
        body = {"spec": tiny_spec(seed=seed, rounds=5)}
        return str(c.post("/runs", json=body).raise_for_status().json()["id"])

    ids["failed"] = submit(5)
    assert execute_here(stack, ids["failed"], FakeRunner(fail_at=2)) == "failed"
    ids["running"] = submit(6)
    assert execute_here(stack, ids["running"], FakeRunner(on_round=die_after(2))) == "died"
    ids["queued"] = submit(7)
    # A second token of the same member: only the dashboard's own is "this browser".
    c.post("/tokens", json={"name": "laptop"}).raise_for_status()
    states = {k: c.get(f"/runs/{ids[k]}").json()["status"] for k in ("failed", "running")}
    assert states == {"failed": "failed", "running": "running"}
    return ids


def _settle(page: Any, ready: str = '[data-testid="stMain"] h1') -> None:
    browse.settle(page, ready)


def _row_of(frame: Any, short: str) -> int:
    """The row (0 = first) whose id cell is `short`."""
    headers, rows = browse.grid(frame)
    col = headers.index("id")
    return next(i for i, r in enumerate(rows) if r[col] == short)


def _tick(page: Any, table: Any, short: str, until: Any) -> None:
    """Tick (or untick) the row of run `short` until `until` shows: the table refreshes every
    3 s while runs are active, and a click that lands during a redraw is lost."""
    for _ in range(3):
        table.scroll_into_view_if_needed()
        browse.tick_row(page, table, _row_of(table, short))
        page.locator(IDLE).wait_for(timeout=30_000)
        try:
            until.first.wait_for(timeout=10_000)
        except Exception:  # noqa: BLE001 (Playwright's TimeoutError: the click was lost)
            continue
        return
    until.first.wait_for(timeout=10_000)


@pytest.mark.timeout(300)
def test_doors_and_layout_at_1280(tmp_path: Path) -> None:
    needs(os.path.exists(CHROMIUM), f"Debian's chromium at {CHROMIUM}")
    shots = Path(os.environ.get("FEDGEN_SCREENSHOTS") or tmp_path / "screens")
    seen: dict[str, Any] = {}
    with lab_stack(tmp_path / "home", worker=False) as stack:
        headers = {"Authorization": f"Bearer {stack.token}"}
        api = httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30)
        with api, browser_page(tmp_path / "profile", WIDTH, HEIGHT) as opened:
            page: Any = opened
            ids = _arrange(stack, api)
            base = stack.dashboard_url
            queued = ids["queued"]

            # Runs: what applies is shown, nothing essential off-screen or cut.
            browse.visit(page, base, "runs", TABLE)
            seen["runs title"] = page.title()
            seen["per page"] = page.evaluate(PER_PAGE)
            seen["runs cut"] = page.evaluate(CUT)
            table = page.locator(TABLE).first
            seen["runs headers"] = browse.grid(table)[0]
            browse.shot(page, shots, "runs")
            command = page.locator('[data-testid="stCode"]').filter(has_text="fedgen export")
            _tick(page, table, ids["succeeded"][:8], command)
            seen["export"] = [
                page.locator('[data-testid="stCode"]').nth(i).inner_text()
                for i in range(page.locator('[data-testid="stCode"]').count())
            ]
            command.scroll_into_view_if_needed()
            command.hover()  # the copy button shows on hover
            copy = command.locator('[title="Copy to clipboard"], [aria-label="Copy to clipboard"]')
            seen["copy buttons"] = copy.count()
            browse.shot(page, shots, "runs-details")
            _tick(page, table, ids["succeeded"][:8], page.get_by_text("Compare (tick runs)"))

            # Delete asks, then offers Undo.
            _tick(
                page, table, queued[:8], page.get_by_role("button", name=re.compile(r"^Delete 1…"))
            )
            page.get_by_role("button", name=re.compile(r"^Delete 1…")).click()
            page.get_by_role("button", name="Yes, delete").click()
            page.get_by_role("button", name="Undo").wait_for(timeout=30_000)
            page.locator(IDLE).wait_for(timeout=30_000)
            page.get_by_role("link", name="Open the Trash").wait_for(timeout=30_000)
            seen["deleted"] = browse.flat(browse.main_text(page))
            seen["after delete"] = api.get(f"/runs/{queued}").status_code
            browse.shot(page, shots, "runs-deleted")
            page.get_by_role("button", name="Undo").click()
            page.get_by_role("button", name="Undo").wait_for(state="detached", timeout=30_000)
            page.locator(IDLE).wait_for(timeout=30_000)
            seen["after undo"] = api.get(f"/runs/{queued}").status_code

            # Trash: a restore says so, links to it and can be undone.
            api.delete(f"/runs/{queued}").raise_for_status()
            browse.visit(page, base, "trash", TABLE)
            seen["trash title"] = page.title()
            page.get_by_role("button", name=re.compile(rf"^Restore run .*{queued[:8]}")).click()
            page.get_by_role("button", name="Undo").wait_for(timeout=30_000)
            page.locator(IDLE).wait_for(timeout=30_000)
            # The link is drawn beside the note; on a loaded machine the text was once read
            # before it was (the note, the Undo button and the rest of the page already were).
            page.get_by_role("link", name="Open the run").wait_for(timeout=30_000)
            seen["restored"] = browse.flat(browse.main_text(page))
            seen["after restore"] = api.get(f"/runs/{queued}").status_code
            browse.shot(page, shots, "trash-restored")
            page.get_by_role("button", name="Undo").click()
            page.get_by_role("button", name="Undo").wait_for(state="detached", timeout=30_000)
            seen["after undoing the restore"] = api.get(f"/runs/{queued}").status_code

            # Settings: nothing preselected, this browser's token marked, revoking it asks.
            browse.visit(page, base, "settings", TABLE)
            seen["settings title"] = page.title()
            picker = page.get_by_role("combobox", name="Token to revoke")
            box = page.locator('[data-testid="stSelectbox"]').filter(has_text="Token to revoke")
            seen["picker"] = box.inner_text()
            seen["picker placeholder"] = box.evaluate(
                "(b) => [...b.querySelectorAll('input, [placeholder]')].map("
                "(e) => (e.getAttribute('placeholder') || '') + '|' + (e.value || ''))"
                ".concat([...b.querySelectorAll('*')].filter((e) => e.children.length === 0)"
                ".map((e) => e.textContent))"
            )
            tokens = page.locator(TABLE).first
            heads, rows = browse.grid(tokens)
            seen["token rows"] = [dict(zip(heads, r, strict=False)) for r in rows]
            browse.shot(page, shots, "settings-tokens")
            picker.click()
            options = page.locator('[role="option"]')
            seen["options"] = [options.nth(i).inner_text() for i in range(options.count())]
            options.filter(has_text="this browser").first.click()
            page.locator(IDLE).wait_for(timeout=30_000)
            page.get_by_role("button", name=re.compile("Revoke")).click()
            page.get_by_role("button", name="Yes, revoke").wait_for(timeout=30_000)
            seen["revoke asks"] = browse.flat(
                page.locator('[data-testid="stPopoverBody"]').inner_text()
            )
            browse.shot(page, shots, "settings-revoke-this-browser")
            page.keyboard.press("Escape")

            # Submit: the switch keeps the fields; the note says who reads it.
            browse.visit(page, base, "submit", '[data-testid="stCode"]')
            seen["submit title"] = page.title()
            rounds = page.get_by_role("spinbutton", name="Rounds", exact=True)
            rounds.fill("7")
            rounds.press("Enter")
            page.locator(IDLE).wait_for(timeout=30_000)
            radio = page.locator('[data-testid="stRadio"] label')
            radio.filter(has_text=re.compile(r"^Sweep$")).click()
            page.get_by_role("textbox", name="Rounds", exact=True).wait_for(timeout=30_000)
            page.locator(IDLE).wait_for(timeout=30_000)
            seen["sweep rounds"] = page.get_by_role(
                "textbox", name="Rounds", exact=True
            ).input_value()
            page.get_by_text("Tags and note").click()
            seen["submit text"] = browse.flat(browse.main_text(page))
            browse.shot(page, shots, "submit-sweep")
            radio.filter(has_text=re.compile(r"^Single run$")).click()
            page.get_by_role("spinbutton", name="Rounds", exact=True).wait_for(timeout=30_000)
            page.locator(IDLE).wait_for(timeout=30_000)
            seen["single rounds"] = rounds.input_value()
            seen["exceptions"] = browse.exceptions(page)

            # The REST sweep's answer links to its dashboard page; its controls are not cut.
            link = ids["sweep"]["link"]
            page.goto(base + link)
            browse.settle(page, browse.CHART)
            seen["sweep link"] = (link, page.title(), page.url)
            seen["compare cut"] = page.evaluate(CUT)
            browse.shot(page, shots, "compare-from-sweep-link")
            seen["exceptions"] += browse.exceptions(page)
        seen["tracebacks"] = browse.tracebacks(stack.home / "logs" / "dashboard.log")
    # Tabs
    assert [seen[f"{p} title"] for p in ("runs", "trash", "settings", "submit")] == [
        "Runs · FedGen Lab",
        "Trash · FedGen Lab",
        "Settings · FedGen Lab",
        "Submit · FedGen Lab",
    ]
    # Runs at 1,280 px
    assert seen["per page"] is not None
    assert seen["per page"]["text"] == "100", seen["per page"]
    assert not seen["per page"]["cut"], seen["per page"]
    assert seen["runs cut"] == [], seen["runs cut"]
    assert {"run", "status", "owner", "id"} <= set(seen["runs headers"]), seen["runs headers"]
    assert f"fedgen export {ids['succeeded'][:8]}" in seen["export"], seen["export"]
    assert seen["copy buttons"] >= 1
    # Delete: asked, then Undo restores
    assert "Moved 1 run to Trash" in seen["deleted"], seen["deleted"]
    assert "Open the Trash" in seen["deleted"]
    assert seen["after delete"] == 404
    assert seen["after undo"] == 200  # back out of the Trash (cancelled, as the delete said)
    # Restore: said, linked, undone
    assert f"Restored run {queued[:8]}." in seen["restored"], seen["restored"]
    assert "Open the run" in seen["restored"]
    assert seen["after restore"] == 200
    assert seen["after undoing the restore"] == 404
    # Settings
    shown = " ".join(seen["picker placeholder"])
    assert "Pick a token to revoke" in shown, shown  # nothing picked: the placeholder
    assert "(" not in seen["picker"], seen["picker"]  # no token's label
    marked = [o for o in seen["options"] if o.endswith("· this browser")]
    assert len(marked) == 1, seen["options"]
    assert len(seen["options"]) >= 2, seen["options"]
    used = {r.get("name"): r.get("used by") for r in seen["token rows"]}
    assert used.get("laptop") == "", used
    assert list(used.values()).count("this browser") == 1, used
    assert "signs this browser out" in seen["revoke asks"], seen["revoke asks"]
    # Submit
    assert seen["sweep rounds"] == "7"
    assert seen["single rounds"] == "7"
    assert "Note (every lab member can read it)" in seen["submit text"]
    assert "visible to every member of the lab" in seen["submit text"]
    sweep_id = ids["sweep"]["id"]
    assert seen["sweep link"][0] == f"/?page=compare&sweep={sweep_id}"
    assert seen["sweep link"][1] == "Compare · FedGen Lab"
    assert f"sweep={sweep_id}" in seen["sweep link"][2]
    assert seen["compare cut"] == [], seen["compare cut"]
    assert seen["exceptions"] == []
    assert seen["tracebacks"] == []
