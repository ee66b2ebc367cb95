"""Pure helpers of the Lab page's storage table: GET /usage as rows (one per member) and the
line above them. No Streamlit.

An admin sees every member, a member themselves. Usage is what a member's runs store now
(trashed runs until purged); "still to come" is what their queued and running runs are
estimated to add. A submission over the quota is refused, so the share shown is of the quota.
"""

from __future__ import annotations

import pandas as pd

from fedgen.resources import format_bytes
from vocab.schemas.usage import MemberUsage, UsageList

COLUMNS = ["member", "stored", "still to come", "quota", "used", "queued runs", "runs"]
HELP = {
    "stored": "What the member's runs store now (rounds and checkpoints); a run in the trash "
    "counts until it is purged",
    "still to come": "What their queued and running runs are estimated to add by the time they "
    "finish",
    "quota": "What their runs may store together: their own (fedgen-lab quota set) or the lab's "
    "FEDGEN_QUOTA_BYTES",
    "used": "stored + still to come, as a share of the quota; a submission that would pass "
    "100% is refused",
}


def share(u: MemberUsage) -> str:
    """`42%` of the quota (stored and still to come); `-` for a quota of 0."""
    if u.quota_bytes <= 0:
        return "-"
    return f"{100 * (u.usage_bytes + u.reserved_bytes) / u.quota_bytes:.0f}%"


def table(body: UsageList) -> pd.DataFrame:
    """One row per member, in the API's order (largest usage first)."""
    rows = [
        {
            "member": u.name + (" (admin)" if u.is_admin else ""),
            "stored": format_bytes(u.usage_bytes),
            "still to come": format_bytes(u.reserved_bytes),
            "quota": format_bytes(u.quota_bytes) + ("" if u.quota_is_default else " (own)"),
            "used": share(u),
            "queued runs": u.queued_runs,
            "runs": u.runs,
        }
        for u in body.data
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(body: UsageList) -> str:
    """`3 members store 12.5 GiB` (an admin's view) or `Your runs store 1.2 GiB of 50 GiB`."""
    total = sum(u.usage_bytes for u in body.data)
    if len(body.data) == 1:
        u = body.data[0]
        return f"Your runs store {format_bytes(u.usage_bytes)} of {format_bytes(u.quota_bytes)}"
    members = f"{len(body.data)} member" + ("s" if len(body.data) != 1 else "")
    return f"{members} store {format_bytes(total)}"
