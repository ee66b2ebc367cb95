"""GET /tokens marks the token the request was made with (`current`), so that a client can
say which of its tokens revoking would sign it out of."""

from __future__ import annotations

from fastapi.testclient import TestClient

API = "/api/v1"


def test_the_token_of_the_request_is_marked_current(
    client: TestClient, auth: dict[str, str]
) -> None:
    made = client.post(f"{API}/tokens", json={"name": "laptop"}, headers=auth)
    assert made.status_code == 201, made.text
    assert made.json()["current"] is False
    laptop = {"Authorization": f"Bearer {made.json()['token']}"}
    for headers, current in ((auth, "alice"), (laptop, "laptop")):
        listed = client.get(f"{API}/tokens", headers=headers).json()["data"]
        assert [t["name"] or t["user"] for t in listed if t["current"]] == [current], listed
