"""Limits a member cannot step around, tried from outside on a live API (uvicorn on loopback):
tokens per member (FEDGEN_MAX_TOKENS_PER_USER), event streams per member over all their tokens
(FEDGEN_MAX_STREAMS_PER_USER), bad stream tokens counted against the failure budget
(FEDGEN_AUTH_FAIL_RATE), stream tokens kept out of the access log, and a submission's CPU-time
estimate capped (FEDGEN_MAX_SUBMISSION_CPU_S).

Each test has a pytest-timeout, so a stream that does not close fails instead of hanging; no
timed assertion.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx
import pytest

from fedgen.spec import parse_spec
from fedgen.studies import registry
from fedgen.studies.costs import estimate_cpu_s
from tests.support.live_api import LiveApi, live_api
from tests.support.procs import wait_for


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApi]:
    """One live API for the module; each test sets its limits with `configure`."""
    with live_api(tmp_path_factory.mktemp("live")) as api:
        yield api


def _mint(c: httpx.Client, live: LiveApi, who: str) -> httpx.Response:
    return c.post("/tokens", json={"name": "tab"}, headers=live.headers(who))


def _stream_token(c: httpx.Client, live: LiveApi, who: str) -> str:
    r = c.post(f"/runs/{live.run_id}/stream-token", headers=live.headers(who))
    assert r.status_code == 200, r.text
    token: str = r.json()["token"]
    return token


def _open(stack: contextlib.ExitStack, c: httpx.Client, url: str, **kw: object) -> int:
    resp: httpx.Response = stack.enter_context(c.stream("GET", url, **kw))  # type: ignore[arg-type]
    return resp.status_code


@pytest.mark.timeout(120)
def test_minted_tokens_are_capped_and_give_no_more_streams(live: LiveApi) -> None:
    """FEDGEN_MAX_TOKENS_PER_USER=3: alice's third and fourth token are refused (429 naming the
    setting) until she revokes one. FEDGEN_MAX_STREAMS_PER_USER=3: her streams over three tokens
    (one through a stream token) stop at 3 (429 naming it), though each token has room; bob's
    still opens; closing one gives her place back."""
    # Prepare
    live.configure(max_tokens_per_user=3, max_streams_per_token=8, max_streams_per_user=3)
    events = f"/runs/{live.run_id}/events"
    with live.client() as c:
        # Execute: alice holds 1 token; two more pass, the next two do not
        minted = [_mint(c, live, "alice") for _ in range(4)]
        codes = [r.status_code for r in minted]
        second, third = minted[0].json(), minted[1].json()
        revoked = c.delete(f"/tokens/{second['id']}", headers=live.headers("alice"))
        after_revoke = _mint(c, live, "alice")
        tokens = [live.tokens["alice"], third["token"], after_revoke.json()["token"]]
        via_query = _stream_token(c, live, tokens[2])
        with contextlib.ExitStack() as stack:
            opened = [
                _open(stack, c, events, headers=live.headers(tokens[0])),
                _open(stack, c, events, headers=live.headers(tokens[1])),
                _open(stack, c, f"{events}?token={via_query}"),
            ]
            fourth = c.get(events, headers=live.headers(tokens[2]))
            bobs = _open(stack, c, events, headers=live.headers("bob"))
        # Every stream closed by the client: alice's places are given back.
        slots = live.app.state.limits.streams
        wait_for(lambda: slots.open_count("user:" + _user_hex(live)) == 0, "places released", 30)
        with c.stream("GET", events, headers=live.headers(tokens[1])) as again:
            again_code = again.status_code
    # Assert
    assert codes == [201, 201, 429, 429], [r.text for r in minted]
    assert "FEDGEN_MAX_TOKENS_PER_USER" in minted[2].json()["detail"]
    assert "3" in minted[2].json()["detail"]
    assert revoked.status_code == 200
    assert after_revoke.status_code == 201
    assert opened == [200, 200, 200]
    assert fourth.status_code == 429
    assert "FEDGEN_MAX_STREAMS_PER_USER" in fourth.json()["detail"]
    assert int(fourth.headers["Retry-After"]) >= 1
    assert bobs == 200
    assert again_code == 200


def _user_hex(live: LiveApi) -> str:
    from lab.db import session_scope
    from lab.models import User

    with session_scope(live.app.state.sessionmaker) as s:
        return s.query(User).filter_by(name="alice").one().id.hex


@pytest.mark.timeout(120)
def test_bad_stream_tokens_count_toward_the_failure_budget(live: LiveApi) -> None:
    """FEDGEN_AUTH_FAIL_RATE=20/minute: 25 forged `?token=` values get 20 x 401 then 429, as
    bad bearer tokens do; a valid stream token still opens its stream."""
    # Prepare
    live.configure(auth_fail_rate="20/minute")
    events = f"/runs/{live.run_id}/events"
    with live.client() as c:
        valid = _stream_token(c, live, "alice")
        forged = valid[: valid.rindex(".") + 1] + "0" * 64
        expired = valid.split(".")
        expired[2] = "1000000000"
        # Execute
        codes = [c.get(events, params={"token": forged}).status_code for _ in range(22)]
        codes += [c.get(events, params={"token": ".".join(expired)}).status_code for _ in range(3)]
        with c.stream("GET", events, params={"token": valid}) as ok:
            valid_code = ok.status_code
    # Assert
    assert codes == [401] * 20 + [429] * 5
    assert valid_code == 200


@pytest.mark.timeout(120)
def test_stream_tokens_never_reach_the_access_log(live: LiveApi) -> None:
    """uvicorn's access log writes `token=***` for a stream opened with `?token=`, and for a
    refused one: never the token."""
    # Prepare
    live.configure()
    events = f"/runs/{live.run_id}/events"
    with live.client() as c:
        valid = _stream_token(c, live, "alice")
        bogus = "fgs_not-a-real-stream-token"
        # Execute
        with c.stream("GET", f"{events}?since_round=-1&token={valid}") as resp:
            code = resp.status_code
        refused = c.get(events, params={"token": bogus})
    wait_for(lambda: sum("token=" in line for line in live.access_log) >= 2, "the log lines", 30)
    # Assert
    assert (code, refused.status_code) == (200, 401)
    logged = "\n".join(live.access_log)
    assert valid not in logged
    assert valid.split(".")[-1] not in logged  # not even its signature
    assert bogus not in logged
    assert f"{events}?since_round=-1&token=***" in logged


@pytest.mark.timeout(120)
def test_a_study_over_the_cpu_cap_is_refused_with_its_estimate(live: LiveApi) -> None:
    """A study of about 1.48 M estimated CPU-seconds is a 422 on `grid` stating the estimate
    (the one GET /studies/{name} shows) and FEDGEN_MAX_SUBMISSION_CPU_S; nothing is queued; a
    single run over the cap is a 422 on spec.rounds; within the cap the study is accepted."""
    # Prepare
    live.configure(max_submission_cpu_s=250_000)
    name, rounds = "fig5-stragglers", 5654
    shown = registry.plan(registry.get_study(name), registry.StudyOverrides(rounds=rounds))
    bob = live.headers("bob")
    with live.client() as c:
        before = c.get("/runs", headers=bob).json()["count"]
        # Execute
        big = c.post(f"/studies/{name}", json={"rounds": rounds}, headers=bob)
        est = c.get(f"/studies/{name}", params={"rounds": rounds}, headers=bob)
        live.configure(max_submission_cpu_s=100)
        one = c.post("/runs", json={"spec": {"rounds": 10_000}}, headers=bob)
        after = c.get("/runs", headers=bob).json()["count"]
        live.configure(max_submission_cpu_s=250_000)
        small = c.post(f"/studies/{name}", json={"rounds": 5}, headers=bob)
    # Assert
    assert 1.4e6 < shown.est_cpu_s < 1.6e6
    assert est.json()["est_cpu_s"] == pytest.approx(shown.est_cpu_s, abs=0.1)
    assert big.status_code == 422, big.text
    (problem,) = big.json()["detail"]
    assert problem["field"] == "grid"
    assert f"{shown.est_cpu_s:,.0f} s" in problem["msg"]
    assert "FEDGEN_MAX_SUBMISSION_CPU_S = 250,000 s" in problem["msg"]
    assert one.status_code == 422, one.text
    (run_problem,) = one.json()["detail"]
    assert run_problem["field"] == "spec.rounds"
    assert "FEDGEN_MAX_SUBMISSION_CPU_S" in run_problem["msg"]
    assert after == before
    assert small.status_code == 202, small.text
    assert estimate_cpu_s(shown.specs[0]) > 0


@pytest.mark.timeout(120)
def test_the_cpu_cap_cannot_be_passed_one_submission_at_a_time(live: LiveApi) -> None:
    """FEDGEN_MAX_MEMBER_CPU_S = 2.5 runs' estimate: carol's first two runs are queued, the
    third is a 422 on spec.rounds stating her queued runs' estimate and the limit; once she
    cancels one, it is accepted. Each run alone is far within FEDGEN_MAX_SUBMISSION_CPU_S."""
    # Prepare
    from lab.db import session_scope
    from lab.repository import users as users_repo

    with session_scope(live.app.state.sessionmaker) as s:
        live.tokens["carol"] = users_repo.create_user(s, "carol", False)[1]
    spec = {"rounds": 400}
    one = estimate_cpu_s(parse_spec(spec))
    live.configure(max_submission_cpu_s=one * 10, max_member_cpu_s=one * 2.5)
    carol = live.headers("carol")
    with live.client() as c:
        # Execute
        codes = [c.post("/runs", json={"spec": spec}, headers=carol) for _ in range(3)]
        cancelled = c.post(f"/runs/{codes[0].json()['id']}/cancel", headers=carol)
        again = c.post("/runs", json={"spec": spec}, headers=carol)
    # Assert
    assert [r.status_code for r in codes] == [202, 202, 422], codes[2].text
    (problem,) = codes[2].json()["detail"]
    assert problem["field"] == "spec.rounds"
    assert f"+ {2 * one:,.0f} s still to come from your queued and running runs" in problem["msg"]
    assert f"FEDGEN_MAX_MEMBER_CPU_S = {one * 2.5:,.0f} s" in problem["msg"]
    assert cancelled.status_code == 202, cancelled.text
    assert again.status_code == 202, again.text
