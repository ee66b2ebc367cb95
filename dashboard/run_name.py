"""The display names of the runs a page lists (`compact_names`): what differs among them, by
`vocab.run_names`' parts (the one naming of runs and algorithms). No Streamlit.
"""

from __future__ import annotations

from collections.abc import Iterable

from fedgen import specdict
from vocab.run_names import FIRST, compact_name
from vocab.schemas.runs import RunPublic


def compact_names(runs: Iterable[RunPublic]) -> dict[str, str]:
    """Run id -> its display name among `runs`; " #2" marks a repeated spec.

    The algorithm and the dataset always lead (a run alone, on Live, starts as it does in
    the Runs table), then the other fields that differ among `runs`, then the seed.
    """
    flats = {r.id: specdict.flatten(r.spec) for r in runs}
    varying = list(dict.fromkeys([*FIRST, *specdict.differing_fields(flats.values())]))
    out: dict[str, str] = {}
    taken: dict[str, int] = {}
    for rid, flat in flats.items():
        shown = {f: flat[f] for f in varying if flat.get(f) is not None}
        name = compact_name(shown, flat.get("seed"))
        taken[name] = taken.get(name, 0) + 1
        out[rid] = name if taken[name] == 1 else f"{name} #{taken[name]}"
    return out
