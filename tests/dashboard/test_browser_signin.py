"""A lab member opens a shared Compare link on a dashboard that has no token of its own.

One real lab (API + dashboard started without FEDGEN_TOKEN, as docker-compose runs it; no
worker: the sweep's runs are executed in this process by the worker's `execute_run` with the
shared fake runner). In a new browser context the link shows the sign-in form (no error box),
a wrong token is refused on the form, the right one opens exactly the linked view, a reload
keeps it without a second sign-in (the cookie), and Sign out brings the form back for good.

Screenshots go to $SIGNIN_SHOTS when set (the issue's closing note), else to tmp_path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.support.dashboard_lab import tiny_spec
from tests.support.needs import needs
from tests.support.stack import CHROMIUM, Stack, browser_page, lab_stack

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SIGN_IN = "Sign in to FedGen Lab"


def _seed_sweep(stack: Stack) -> tuple[str, str]:
    """A finished two-run sweep (FedAvg, seeds 0 and 1): its id and name."""
    from lab.config import Settings
    from lab.db import make_engine, make_sessionmaker
    from tests.support.fakes import FakeRunner
    from worker.claimed_run import execute_run

    headers = {"Authorization": f"Bearer {stack.token}"}
    with httpx.Client(base_url=stack.api_url + "/api/v1", headers=headers, timeout=30) as c:
        body = {"name": "shared-sweep", "base": tiny_spec(rounds=4), "grid": {"seed": [0, 1]}}
        sweep = c.post("/sweeps", json=body).raise_for_status().json()
    settings = Settings(home=stack.home, database_url=f"sqlite:///{stack.home / 'lab.db'}")
    engine = make_engine(settings.database_url)
    try:
        for run_id in sweep["run_ids"]:
            status = execute_run(
                run_id,
                make_sessionmaker(engine),
                runner=FakeRunner(),
                settings=settings,
                worker_name="w1@lab-host",
            )
            assert status == "succeeded", status
    finally:
        engine.dispose()
    return str(sweep["id"]), "shared-sweep"


def _problems(page: Any) -> list[str]:
    """Streamlit exception boxes and error alerts on the page (neither may show)."""
    found = []
    for sel in ('[data-testid="stException"]', '[data-testid="stAlertContentError"]'):
        boxes = page.locator(sel)
        found += [boxes.nth(i).inner_text()[:300] for i in range(boxes.count())]
    return found


def _linked_view(page: Any) -> dict[str, Any]:
    """What the Compare page shows of the link's view: the sweep and metric chosen (the x axis
    and the rest are read from the address, which the page writes from its widgets)."""
    page.get_by_role("heading", name="Compare").wait_for(timeout=30_000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    page.wait_for_timeout(800)  # the last deltas of the run (a late exception box) land
    sweep = page.get_by_role("combobox", name="Take all runs of a sweep").input_value()
    metric = page.get_by_role("combobox", name="Metric").input_value()
    return {
        "sweep": sweep.split(" (")[0],  # "shared-sweep (2 runs)"
        "metric": metric.replace("_", " "),  # the readable title, or the key
        "sign_in_form": page.get_by_role("heading", name=SIGN_IN).count(),
        "problems": _problems(page),
    }


def _cookie(page: Any) -> dict[str, Any] | None:
    return next((c for c in page.context.cookies() if c["name"] == "fedgen_token"), None)


@pytest.mark.timeout(150)
def test_shared_link_signs_in_once_and_survives_reload(tmp_path: Path) -> None:
    """Form on the link, wrong token refused, linked view after sign-in and after a reload."""
    needs(os.path.exists(CHROMIUM), f"Debian's chromium at {CHROMIUM}")
    shots = Path(os.environ.get("SIGNIN_SHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    with lab_stack(tmp_path / "home", worker=False, dashboard_token=False) as stack:
        sweep_id, sweep_name = _seed_sweep(stack)
        link = f"{stack.dashboard_url}/compare?sweep={sweep_id}&metric=test_loss&x=wall-clock"
        addresses: list[str] = []
        with browser_page(tmp_path / "profile") as page:  # a fresh profile: no cookie yet
            page.on("framenavigated", lambda f: addresses.append(f.url))  # type: ignore[attr-defined]
            # Execute: open the link
            page.goto(link)  # type: ignore[attr-defined]
            page.get_by_role("heading", name=SIGN_IN).wait_for(timeout=30_000)  # type: ignore[attr-defined]
            page.wait_for_timeout(800)  # type: ignore[attr-defined]
            on_link = {"problems": _problems(page), "url": page.url}  # type: ignore[attr-defined]
            on_link["nav"] = page.locator('[data-testid="stSidebarNav"]').count()  # type: ignore[attr-defined]
            on_link["compare_ran"] = page.get_by_role("heading", name="Compare").count()  # type: ignore[attr-defined]
            page.screenshot(path=str(shots / "1-signin-form-on-link.png"), full_page=True)  # type: ignore[attr-defined]
            # Execute: a wrong token, then the right one
            field = page.get_by_label("API token", exact=True).and_(page.locator("input"))  # type: ignore[attr-defined]
            field.fill("fgl_not-a-real-token")
            page.get_by_role("button", name="Sign in").click()  # type: ignore[attr-defined]
            refused = page.get_by_text("That token was not accepted by the lab server")  # type: ignore[attr-defined]
            refused.wait_for(timeout=30_000)
            page.screenshot(path=str(shots / "2-wrong-token.png"), full_page=True)  # type: ignore[attr-defined]
            field.fill(stack.token)
            page.get_by_role("button", name="Sign in").click()  # type: ignore[attr-defined]
            signed_in = _linked_view(page)
            signed_in["url"] = page.url  # type: ignore[attr-defined]
            page.screenshot(path=str(shots / "3-linked-view-after-signin.png"), full_page=True)  # type: ignore[attr-defined]
            cookie = _cookie(page)
            # Execute: reload (a new Streamlit session, the same browser)
            page.reload()  # type: ignore[attr-defined]
            reloaded = _linked_view(page)
            reloaded["url"] = page.url  # type: ignore[attr-defined]
            page.screenshot(path=str(shots / "4-after-reload.png"), full_page=True)  # type: ignore[attr-defined]
            # Execute: sign out, then reload once more
            page.get_by_role("button", name="Sign out").click()  # type: ignore[attr-defined]
            page.get_by_role("heading", name=SIGN_IN).wait_for(timeout=30_000)  # type: ignore[attr-defined]
            page.wait_for_timeout(500)  # type: ignore[attr-defined]
            after_sign_out = _cookie(page)
            page.reload()  # type: ignore[attr-defined]
            page.get_by_role("heading", name=SIGN_IN).wait_for(timeout=30_000)  # type: ignore[attr-defined]
            page.wait_for_timeout(800)  # type: ignore[attr-defined]
            signed_out = {
                "compare_ran": page.get_by_role("heading", name="Compare").count(),  # type: ignore[attr-defined]
                "problems": _problems(page),
            }
            page.screenshot(path=str(shots / "5-after-sign-out.png"), full_page=True)  # type: ignore[attr-defined]
    # Assert: the link shows the form only, untouched, and runs no page
    assert on_link == {"problems": [], "url": link, "nav": 0, "compare_ran": 0}
    # Assert: signed in, exactly the linked view, the link's address kept
    view = {"sweep": sweep_name, "metric": "test loss", "sign_in_form": 0, "problems": []}
    for seen in (signed_in, reloaded):
        query = parse_qs(urlsplit(seen.pop("url")).query)
        assert query == {"sweep": [sweep_id], "metric": ["test_loss"], "x": ["wall-clock"]}
        assert seen == view
    # Assert: the token lives in a strict first-party cookie, never in an address
    assert cookie is not None
    assert (cookie["value"], cookie["sameSite"], cookie["path"]) == (stack.token, "Strict", "/")
    assert not any(stack.token in a for a in addresses)
    # Assert: signing out forgets the token (cookie gone, the form back after a reload)
    assert after_sign_out is None
    assert signed_out == {"compare_ran": 0, "problems": []}
