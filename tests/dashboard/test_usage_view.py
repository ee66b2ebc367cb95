"""The Lab page's storage table: GET /usage as one row per member (usage_view), and on the page
through AppTest on the real seeded lab, whose runs were stored by a worker."""

from __future__ import annotations

from typing import Any

from dashboard.lab_page import usage_view
from tests.support.apptest import open_page, texts
from vocab.schemas.usage import MemberUsage, UsageList

GIB = 1 << 30


def _member(name: str, stored: int, reserved: int, quota: int, *, own: bool) -> MemberUsage:
    return MemberUsage(
        name=name,
        is_admin=name == "admin",
        usage_bytes=stored,
        reserved_bytes=reserved,
        quota_bytes=quota,
        quota_is_default=not own,
        queued_runs=2,
        runs=7,
    )


def test_table_rows_and_share() -> None:
    """Sizes in binary units, the share of the quota counts what is still to come, a member's
    own quota is marked."""
    body = UsageList(
        data=[
            _member("alice", 30 * GIB, 10 * GIB, 50 * GIB, own=False),
            _member("admin", 1536, 0, 200 * GIB, own=True),
        ],
        count=2,
    )
    df = usage_view.table(body)
    assert list(df.columns) == usage_view.COLUMNS
    assert df.iloc[0].to_dict() == {
        "member": "alice",
        "stored": "30 GiB",
        "still to come": "10 GiB",
        "quota": "50 GiB",
        "used": "80%",
        "queued runs": 2,
        "runs": 7,
    }
    assert df.iloc[1]["member"] == "admin (admin)"
    assert df.iloc[1]["quota"] == "200 GiB (own)"
    assert usage_view.summary(body) == "2 members store 30 GiB"
    one = UsageList(data=body.data[:1], count=1)
    assert usage_view.summary(one) == "Your runs store 30 GiB of 50 GiB"


def test_lab_page_shows_storage_per_member(app_path: str, lab_env: dict[str, Any]) -> None:
    """The seeded lab's admin stores its finished runs' rounds and checkpoints: more than
    nothing, shown under Storage."""
    at = open_page(app_path, "app_pages/lab.py")
    assert not at.exception
    tables = [d.value for d in at.dataframe if "still to come" in d.value.columns]
    assert len(tables) == 1
    rows = tables[0].to_dict("records")
    admin = [r for r in rows if r["member"].endswith("(admin)")]
    assert len(admin) == 1
    assert admin[0]["stored"] != "0 B"
    assert admin[0]["runs"] >= 5
    assert "Storage" in [h.value for h in at.subheader]
    assert "store" in texts(at)
