"""The Table 1 row a run belongs to (the paper's numbers themselves live in `fedgen.paper`)."""

from __future__ import annotations

from fedgen.paper import DATASETS, Setting, format_alpha


def setting_of(spec_fields: dict[str, object]) -> Setting:
    """The Table 1 row a (flattened) spec belongs to."""
    name = str(spec_fields.get("data.name", "?"))
    dataset = DATASETS.get(name, name)
    steps = int(_number(spec_fields, "local_steps", 20))
    if name == "celeba":
        setting = f"r={spec_fields.get('users_per_round')}/{spec_fields.get('partition.num_users')}"
    else:
        setting = format_alpha(_number(spec_fields, "partition.alpha", 0.0))
    return Setting(dataset, setting, steps)


def _number(spec_fields: dict[str, object], key: str, default: float) -> float:
    """A numeric field of a flattened spec; `default` when it is missing, null or 0."""
    value = spec_fields.get(key)
    if not value:
        return default
    if not isinstance(value, int | float | str):
        raise TypeError(f"{key}: expected a number, got {type(value).__name__}")
    return float(value)
