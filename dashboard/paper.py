"""The Table 1 row a run belongs to (the paper's numbers themselves live in `fedgen.paper`)."""

from __future__ import annotations

from fedgen.paper import DATASETS, Setting, format_alpha


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
