"""What the Compare page computes besides the statistics: names, trace styles, CSV tables.

Pure functions (no Streamlit, no network), so the page's choices can be tested:
runs are named for people (never by UUID), each curve is coloured by its algorithm
(one fixed colour per algorithm, whatever else the selection holds) and dashed by
the next field that differs (e.g. α), and every mode has a CSV.
"""

from __future__ import annotations

import zlib
from typing import Any

import pandas as pd
from plotly.colors import qualitative

from fedgen.specdict import differing_fields, flatten, format_value, get_dotted, run_label

# One colour per algorithm, in the order fedgen.spec lists them; never reassigned by position
# in a selection, so FedGen is the same colour at every α and on every page.
ALGORITHM_ORDER = (
    "fedavg", "fedprox", "fedensemble", "feddistill", "feddistill-plus", "feddf", "fedgen",
)  # fmt: skip
_PALETTE = qualitative.D3
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star")
ALGORITHM_FIELD = "algorithm.name"


def algorithm_color(name: str | None) -> str:
    """The fixed colour of an algorithm (an unknown name gets a stable colour from its hash)."""
    if name in ALGORITHM_ORDER:
        return _PALETTE[ALGORITHM_ORDER.index(name) % len(_PALETTE)]
    return _PALETTE[zlib.crc32(str(name).encode()) % len(_PALETTE)]


def run_names(runs: list[dict[str, Any]]) -> dict[str, str]:
    """Run id -> "fedgen · fashion-mnist · α=0.1 · seed=0" (" #2" on a repeated spec)."""
    out: dict[str, str] = {}
    seen: dict[str, int] = {}
    for run in runs:
        label = run_label(run.get("spec") or {})
        seen[label] = seen.get(label, 0) + 1
        out[str(run.get("id"))] = label if seen[label] == 1 else f"{label} #{seen[label]}"
    return out


def seed_names(runs: list[dict[str, Any]], groups: dict[str, str]) -> dict[str, str]:
    """Ungrouped legend names: the group's differing fields and the seed, unique per run."""
    out: dict[str, str] = {}
    taken: dict[str, int] = {}
    for run in runs:
        rid = str(run.get("id"))
        group = groups.get(rid, "all")
        seed = get_dotted(run.get("spec") or {}, "seed", "?")
        name = f"seed={seed}" if group == "all" else f"{group}, seed={seed}"
        taken[name] = taken.get(name, 0) + 1
        out[rid] = name if taken[name] == 1 else f"{name} #{taken[name]}"
    return out


def trace_styles(
    runs: list[dict[str, Any]], names: dict[str, str], fields: list[str] | None = None
) -> dict[str, dict[str, str]]:
    """Curve name -> {"color", "dash", "symbol"}: colour by algorithm, dash by what else differs.

    `names` maps run id -> curve name (a group label or a run name). The dash (and marker)
    follows the values of the differing `fields` other than the algorithm (default: every
    field that differs among `runs` except the seed), in sorted order, so "α=0.1" is solid
    and "α=1" dashed for every algorithm.
    """
    flats = {str(r.get("id")): flatten(r.get("spec") or {}) for r in runs}
    varying = differing_fields(flats.values(), fields)
    rest = [f for f in varying if f != ALGORITHM_FIELD]
    first: dict[str, dict[str, Any]] = {}
    for rid, flat in flats.items():
        if rid in names:
            first.setdefault(names[rid], flat)
    keys = {name: tuple(format_value(f.get(k)) for k in rest) for name, f in first.items()}
    order = {k: i for i, k in enumerate(sorted(set(keys.values())))}
    return {
        name: {
            "color": algorithm_color(flat.get(ALGORITHM_FIELD)),
            "dash": DASHES[order[keys[name]] % len(DASHES)],
            "symbol": SYMBOLS[order[keys[name]] // len(DASHES) % len(SYMBOLS)],
        }
        for name, flat in first.items()
    }


def grouped_csv(agg: pd.DataFrame) -> str:
    """The mean ± std curves as CSV (group, round, mean, std, n, wall_s)."""
    return agg.to_csv(index=False)


def runs_csv(long: pd.DataFrame, names: dict[str, str], metric: str) -> str:
    """One row per run and round: the run's name, its id, round, the metric, wall-clock."""
    out = pd.DataFrame(
        {
            "run": long["run_id"].map(lambda i: names.get(str(i), str(i))),
            "run_id": long["run_id"],
            "round": long["round"],
            metric: long["value"],
            "wall_s": long["wall_s"],
        }
    )
    return out.sort_values(["run", "round"], kind="stable").to_csv(index=False)
