"""Where the order of methods changes between the per-user and the global test protocol.

Reads the JSON a study writes (`fedgen study run table1-extended ...` -> study.json, committed
under docs/results/studies/) whose rows come in pairs `<setting>, per-user test` and
`<setting>, global test`, and prints per setting the methods ranked under each protocol and
every pair of methods whose order flips, each difference marked `(within std)` when it is
smaller than the larger of the two cells' std (the study's ± as it stores it: for the
official top-5 statistic the std of the pooled top-5 rounds of every seed, not a std over seeds).

    python bench/protocol_order.py docs/results/studies/table1-extended-fashion-mnist.json
"""

from __future__ import annotations

import argparse
import json
from itertools import combinations
from typing import Any

PROTOCOLS = ("per-user test", "global test")


def _pairs(rows: list[str]) -> dict[str, dict[str, str]]:
    """setting -> {protocol words: row}."""
    out: dict[str, dict[str, str]] = {}
    for row in rows:
        setting, _, words = row.rpartition(", ")
        if words in PROTOCOLS:
            out.setdefault(setting, {})[words] = row
    return out


def report(doc: dict[str, Any]) -> list[str]:
    """The printed lines: rankings and flips per setting with both protocols' cells."""
    cells = {(c["row"], c["column"]): c for c in doc["cells"]}
    lines: list[str] = []
    for setting, rows in _pairs(doc["rows"]).items():
        if len(rows) < 2:
            continue
        pu, gl = rows[PROTOCOLS[0]], rows[PROTOCOLS[1]]
        cols = [
            c
            for c in doc["columns"]
            if cells.get((pu, c), {}).get("n") and cells.get((gl, c), {}).get("n")
        ]
        if not cols:
            continue
        lines.append(setting)
        for name, row in (("per-user", pu), ("global", gl)):
            ranked = sorted(cols, key=lambda c, row=row: -cells[(row, c)]["mean"])
            lines.append(
                f"  {name:8}: "
                + " > ".join(
                    f"{c} {cells[(row, c)]['mean']:.2f}±{cells[(row, c)]['std']:.2f}"
                    + ("" if cells[(row, c)]["n"] == 3 else f" (n={cells[(row, c)]['n']})")
                    for c in ranked
                )
            )
        flips = []
        for a, b in combinations(cols, 2):
            d = [cells[(row, a)]["mean"] - cells[(row, b)]["mean"] for row in (pu, gl)]
            if d[0] * d[1] >= 0:
                continue
            words = []
            for name, row, diff in (("per-user", pu, d[0]), ("global", gl, d[1])):
                std = max(cells[(row, a)]["std"], cells[(row, b)]["std"])
                words.append(f"{name} {diff:+.2f}" + ("" if abs(diff) > std else " (within std)"))
            flips.append(f"{a} vs {b}: {', '.join(words)}")
        lines.append("  order changes: " + ("; ".join(flips) if flips else "none"))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study_json")
    args = ap.parse_args(argv)
    with open(args.study_json) as fh:
        doc = json.load(fh)
    print(f"{doc['study']} on {doc['dataset']}: {doc['statistic_text']}")
    for line in report(doc):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
