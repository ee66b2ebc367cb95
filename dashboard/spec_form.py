"""The Submit form's model: fields with the paper's defaults, and pure spec/sweep builders.

Values are keyed by dotted spec paths (`partition.alpha`). Algorithm parameters are
named `algorithm.<param>` and apply only to the algorithms listed in `FormField.only`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from fedgen.spec import ALGORITHM_NAMES, DATASET_NAMES
from fedgen.specdict import set_dotted

DATASETS = list(DATASET_NAMES)
ALGORITHMS = list(ALGORITHM_NAMES)


@dataclass(frozen=True)
class FormField:
    """One form input: dotted spec path, label, kind (`int|float|str|choice`), paper default."""

    path: str
    label: str
    kind: str
    default: Any
    choices: tuple[str, ...] = ()
    help: str = ""
    only: tuple[str, ...] = ()  # algorithm names this parameter belongs to
    section: str = "run"


# Defaults follow the paper's setting (Sec. 6.1): 20 users, r = 50 %, T = 20, B = 32, 200 rounds.
FIELDS: list[FormField] = [
    FormField("data.name", "Dataset", "choice", "mnist", tuple(DATASETS), section="data"),
    FormField("data.synthetic_samples", "Synthetic samples", "int", 2000, help="Only for 'synthetic'.", section="data"),
    FormField("partition.num_users", "Users", "int", 20, section="data"),
    FormField("partition.alpha", "Dirichlet α", "float", 0.1, help="Smaller = more heterogeneous.", section="data"),
    FormField("partition.sampling_ratio", "Sampling ratio", "float", 0.5, section="data"),
    FormField("algorithm.name", "Algorithm", "choice", "fedgen", tuple(ALGORITHMS), section="algorithm"),
    FormField("algorithm.mu", "FedProx μ", "float", 0.01, only=("fedprox",), section="algorithm"),
    FormField("algorithm.reg_alpha", "Distillation weight", "float", 1.0, only=("feddistill", "feddistill-plus"), section="algorithm"),
    FormField("algorithm.preset", "Generator preset", "choice", "default", ("default", "cnn0", "cnn1", "cnn2", "cnn3"), only=("fedgen",), section="algorithm"),
    FormField("algorithm.gen_batch_size", "Generator batch B_G", "int", 32, only=("fedgen",), section="algorithm"),
    FormField("fidelity.profile", "Fidelity profile", "choice", "paper", ("paper", "official"), help="Paper text or official-code behaviour.", section="algorithm"),
    FormField("rounds", "Rounds", "int", 200, section="run"),
    FormField("users_per_round", "Users per round", "int", 10, section="run"),
    FormField("local_steps", "Local steps T", "int", 20, section="run"),
    FormField("batch_size", "Batch size B", "int", 32, section="run"),
    FormField("lr", "Learning rate", "float", 0.01, section="run"),
    FormField("seed", "Seed", "int", 0, help="In a sweep, e.g. 0, 1, 2.", section="run"),
    FormField("device", "Device", "str", "cpu", help="cpu, cuda or cuda:N", section="run"),
]  # fmt: skip

FIELD_BY_PATH = {f.path: f for f in FIELDS}


def parse_list(text: str, kind: str) -> list[Any]:
    """'0.1, 1' -> [0.1, 1.0]; raises ValueError naming the bad item."""
    items = [t.strip() for t in str(text).replace(";", ",").split(",") if t.strip()]
    if not items:
        raise ValueError("needs at least one value")
    return [coerce(t, kind) for t in items]


def coerce(value: Any, kind: str) -> Any:
    """Convert one form value to the field's type (ValueError with a readable message)."""
    try:
        if kind == "int":
            f = float(value)
            if not f.is_integer():
                raise ValueError
            return int(f)
        if kind == "float":
            return float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"{value!r} is not a valid {'integer' if kind == 'int' else 'number'}"
        ) from None
    return str(value)


def algorithm_block(name: str, values: dict[str, Any]) -> dict[str, Any]:
    """The `algorithm` mapping for `name` with only the parameters that algorithm accepts."""
    block: dict[str, Any] = {"name": name}
    for f in FIELDS:
        if f.only and name in f.only and f.path in values:
            block[f.path.split(".", 1)[1]] = values[f.path]
    return block


def build_spec(values: dict[str, Any]) -> dict[str, Any]:
    """Single-run values (one per dotted field) -> a nested spec dict for the API."""
    spec: dict[str, Any] = {}
    name = values.get("algorithm.name", "fedavg")
    for path, value in values.items():
        if path.startswith("algorithm."):
            continue
        if path == "data.synthetic_samples" and values.get("data.name") != "synthetic":
            continue
        set_dotted(spec, path, value)
    spec["algorithm"] = algorithm_block(name, values)
    return spec


def build_sweep(lists: dict[str, list[Any]]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Sweep values (a list per field) -> (base spec, grid of dotted field -> values).

    Fields with one value go to the base. Algorithm names and their parameters become
    a list of whole `algorithm` mappings (each algorithm with its own parameter grid),
    so e.g. fedavg x fedgen(B_G in 16, 32) is three algorithm entries.
    """
    singles = {k: v[0] for k, v in lists.items() if len(v) == 1}
    base = build_spec({**singles, "algorithm.name": lists.get("algorithm.name", ["fedavg"])[0]})
    grid: dict[str, list[Any]] = {}
    for path, vals in lists.items():
        if len(vals) > 1 and not path.startswith("algorithm."):
            grid[path] = vals
    algo_entries: list[dict[str, Any]] = []
    for name in lists.get("algorithm.name", ["fedavg"]):
        params = [f.path for f in FIELDS if f.only and name in f.only and f.path in lists]
        for combo in itertools.product(*(lists[p] for p in params)):
            algo_entries.append(algorithm_block(name, dict(zip(params, combo, strict=True))))
    if len(algo_entries) > 1:
        grid["algorithm"] = algo_entries
    else:
        base["algorithm"] = algo_entries[0]
    return base, grid


def sweep_size(grid: dict[str, list[Any]]) -> int:
    """How many runs a grid expands to."""
    n = 1
    for vals in grid.values():
        n *= len(vals)
    return n


def split_errors(errors: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Errors for fields on the form vs the rest (shown at the top)."""
    on_form = {k: v for k, v in errors.items() if k in FIELD_BY_PATH}
    return on_form, {k: v for k, v in errors.items() if k not in FIELD_BY_PATH}
