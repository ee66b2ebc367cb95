"""The paper's numbers for the dashboard: one copy lives in `fedgen.paper`; the Table 1 row of a run here."""

from __future__ import annotations

from fedgen.paper import (
    DATASETS,
    PAPER_LABELS,
    TABLE1,
    TABLE2_FEDAVG,
    TABLE2_FEDGEN,
    TABLE3_FEDAVG,
    TABLE3_FEDGEN,
    TABLE4,
    Setting,
    format_alpha,
)

__all__ = [
    "PAPER_LABELS",
    "DATASETS",
    "TABLE1",
    "TABLE2_FEDAVG",
    "TABLE2_FEDGEN",
    "TABLE3_FEDAVG",
    "TABLE3_FEDGEN",
    "TABLE4",
    "Setting",
    "format_alpha",
    "setting_of",
]


def setting_of(spec_fields: dict[str, object]) -> Setting:
    """The Table 1 row a (flattened) spec belongs to."""
    name = str(spec_fields.get("data.name", "?"))
    dataset = DATASETS.get(name, name)
    steps = int(spec_fields.get("local_steps", 20) or 20)  # type: ignore[call-overload]
    if name == "celeba":
        setting = f"r={spec_fields.get('users_per_round')}/{spec_fields.get('partition.num_users')}"
    else:
        setting = format_alpha(float(spec_fields.get("partition.alpha", 0.0) or 0.0))  # type: ignore[arg-type]
    return Setting(dataset, setting, steps)
