"""The paper tables' pure logic: Table 1 (ours beside the paper's numbers, as a matrix
and as LaTeX), Table 3 (time per round), and the API payloads they are built from (a sweep's
summary groups, GET /timing rows). No Streamlit, no network.

The Compare page's curve logic (groups, bands, time to target) is `dashboard.compare_page.curves`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dashboard.table1_row import setting_of
from dashboard.table_csv import varying_fields
from fedgen import paper
from fedgen.algorithms.registry import find_algorithm
from fedgen.paper import TABLE3
from fedgen.specdict import flatten, group_label
from vocab.run_names import SEP, algorithm_name, part
from vocab.schemas.analysis import TimingTable
from vocab.schemas.runs import RunPublic
from vocab.schemas.sweeps import SummaryGroup, SweepSummary

# -- Table 1 ---------------------------------------------------------------------
TABLE1_COLUMNS = [
    "dataset",
    "setting",
    "T",
    "algorithm",
    "mean",
    "std",
    "n",
    "paper_mean",
    "paper_std",
    "diff",
]


def table1_long(groups: pd.DataFrame) -> pd.DataFrame:
    """Our groups (dataset, setting, T, algorithm, mean, std, n in %) beside the paper's numbers,
    with each group's differing spec fields (`fields`, a dict) last."""
    if groups.empty:
        return pd.DataFrame(columns=[*TABLE1_COLUMNS, "fields"])
    rows = []
    # Every column of `summary_groups` (a frame given without the optional ones: NaN there).
    for rec in groups.reindex(columns=SUMMARY_COLUMNS).to_dict("records"):
        paper_setting = rec["paper_setting"]
        if not isinstance(paper_setting, str) or not paper_setting:
            paper_setting = rec["setting"]
        key = paper.Setting(rec["dataset"], paper_setting, int(rec["T"]))
        pub = paper.TABLE1.get(key, {}).get(rec["algorithm"])
        pm, ps = pub if pub else (math.nan, math.nan)
        rows.append(
            {
                **{c: rec[c] for c in TABLE1_COLUMNS[:7]},
                "paper_mean": pm,
                "paper_std": ps,
                "diff": rec["mean"] - pm,
                # The group's differing spec fields: the CSV's column per varying field.
                "fields": rec["fields"] if isinstance(rec["fields"], dict) else {},
            }
        )
    return pd.DataFrame(rows, columns=[*TABLE1_COLUMNS, "fields"])


def _cell(mean: float, std: float) -> str:
    return "–" if mean is None or math.isnan(mean) else f"{mean:.2f} ± {std:.2f}"


def table1_matrix(long: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows (dataset, setting, T), columns algorithms: "ours (paper, Δ)" strings and a best-mask.

    The mask marks, per row, the algorithm with the highest mean of *our* runs.
    """
    if long.empty:
        return pd.DataFrame(), pd.DataFrame()
    algs = [a for a in paper.PAPER_LABELS if a in set(long["algorithm"])]
    algs += sorted(set(long["algorithm"]) - set(algs))
    index = list(dict.fromkeys(zip(long["dataset"], long["setting"], long["T"], strict=True)))
    text = pd.DataFrame(
        "",
        index=pd.MultiIndex.from_tuples(index, names=["dataset", "setting", "T"]),
        columns=[algorithm_name(a) for a in algs],
    )
    mask = pd.DataFrame(False, index=text.index, columns=text.columns)
    for key in index:
        sub = long[
            (long["dataset"] == key[0]) & (long["setting"] == key[1]) & (long["T"] == key[2])
        ]
        best = sub.loc[sub["mean"].idxmax(), "algorithm"] if sub["mean"].notna().any() else None
        for rec in sub.to_dict("records"):
            col = algorithm_name(rec["algorithm"])
            cell = _cell(rec["mean"], rec["std"])
            if not math.isnan(rec["paper_mean"]):
                cell += f" (paper {rec['paper_mean']:.2f}, Δ {rec['diff']:+.2f})"
            text.loc[key, col] = cell
            mask.loc[key, col] = rec["algorithm"] == best
    return text, mask


def table1_latex(long: pd.DataFrame) -> str:
    """A booktabs LaTeX table: ours mean ± std per cell, best per row in bold, paper in a second line."""
    text, mask = table1_matrix(long)
    if text.empty:
        return ""
    cols = list(text.columns)
    lines = [
        "\\begin{tabular}{ll" + "c" * len(cols) + "}",
        "\\toprule",
        "Dataset & Setting & " + " & ".join(c.replace("+", "$+$") for c in cols) + " \\\\",
        "\\midrule",
    ]
    for key in text.index:
        sub = long[
            (long["dataset"] == key[0]) & (long["setting"] == key[1]) & (long["T"] == key[2])
        ]
        by_col = {
            algorithm_name(a): r
            for a, r in zip(sub["algorithm"], sub.to_dict("records"), strict=True)
        }
        ours, pub = [], []
        for c in cols:
            r = by_col.get(c)
            cell = _cell(r["mean"], r["std"]).replace("±", "$\\pm$") if r else "--"
            ours.append(f"\\textbf{{{cell}}}" if bool(mask.loc[key, c]) else cell)
            pub.append(f"({r['paper_mean']:.2f})" if r and not math.isnan(r["paper_mean"]) else "")
        setting = key[1].replace("α", "$\\alpha$")
        lines.append(f"{key[0]}, T={key[2]} & {setting} & " + " & ".join(ours) + " \\\\")
        if any(pub):
            lines.append(" & paper & " + " & ".join(pub) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


# -- Table 3 ---------------------------------------------------------------------
def table3_frame(timing: TimingTable | None) -> pd.DataFrame:
    """Ours vs paper ms per local update: FedAvg and FedGen by B_G, with the ratio to FedAvg.

    From GET /timing's rows that have a time (algorithm, gen_batch_size: None for non-FedGen,
    mean_ms, std_ms, n, setting, setting_key, fields): a row's ratio is to the FedAvg row of its
    own setting (`setting_key` matches rows of one setting, whatever the algorithm, so Table 3
    never compares FedGen on one dataset with FedAvg on another; NaN when that setting has no
    FedAvg row). Absolute ms depend on the hardware; the ratio to FedAvg is what compares
    across machines. Every spec field that varies across the rows (`fields`, the groups'
    differing fields) is said in the row and its setting ("FedAvg · α=0.1") and has a column
    of its own, named by its dotted path.
    """
    cols = [
        "row",
        "ours_ms",
        "ours_std",
        "n",
        "ours_ratio",
        "paper_ms",
        "paper_std",
        "paper_ratio",
        "setting",
    ]
    timed = [(r, r.mean_ms) for r in (timing.rows if timing else []) if r.mean_ms is not None]
    if not timed:
        return pd.DataFrame(columns=cols)
    varying = varying_fields([r.fields for r, _ in timed])
    base: dict[str, float] = {}
    for r, ms in timed:
        decl = find_algorithm(r.algorithm)
        if decl is not None and decl.timing_reference:
            base.setdefault(r.setting_key, float(ms))
    rows = []
    for r, ms in timed:
        alg, bg = str(r.algorithm), r.gen_batch_size
        # B_G is set on the rows of an algorithm told apart by it (AlgorithmDecl.timing_fields)
        label = algorithm_name(alg) + (f" B_G={bg}" if bg is not None else "")
        pm, ps = TABLE3.get((alg, bg), (math.nan, math.nan))
        ref = base.get(r.setting_key, math.nan)
        told = told_apart(r.fields, varying)
        rows.append(
            {
                "row": SEP.join([label, *told]),
                "ours_ms": ms,
                "ours_std": math.nan if r.std_ms is None else r.std_ms,
                "n": r.n,
                "ours_ratio": ms / ref if ref and not math.isnan(ref) else math.nan,
                "paper_ms": pm,
                "paper_std": ps,
                "paper_ratio": pm / paper.TABLE3_FEDAVG[0],
                "setting": SEP.join([_setting_text(r.setting), *told]).strip(SEP),
                **{f: r.fields.get(f) for f in varying},
            }
        )
    return pd.DataFrame(rows, columns=[*cols, *varying])


# A Table 3 time whose std over the pooled rounds is above this share of its mean (its
# coefficient of variation) is flagged as noisy: a ratio between two such times moves by
# about as much from one measurement to the next (docs/metrics.md).
NOISY_CV = 0.10


def noisy_timing(t3: pd.DataFrame) -> str | None:
    """A warning naming the Table 3 rows whose time is noisy (CV = std / mean above
    NOISY_CV), with each one's CV; None when every row is steady or has no std."""
    noisy = []
    for row, ours_ms, ours_std in zip(t3["row"], t3["ours_ms"], t3["ours_std"], strict=True):
        mean, std = float(ours_ms or math.nan), float(ours_std or math.nan)
        if mean > 0 and not math.isnan(std) and std / mean > NOISY_CV:
            noisy.append(f"{row} (CV {100 * std / mean:.0f}%)")
    if not noisy:
        return None
    return (
        f"Noisy timing: {', '.join(noisy)} vary by more than {100 * NOISY_CV:.0f}% of their "
        "mean (std / mean over the pooled rounds). Their ms and ratios to FedAvg are uncertain "
        "by about as much: measure on an idle machine, with more rounds or seeds, before "
        "reading a difference into them."
    )


# Said by a Table 3 row's own label ("FedGen B_G=32"), so not repeated after it.
_IN_ROW_LABEL = frozenset({"algorithm.name", "algorithm.gen_batch_size"})


def told_apart(fields: dict[str, Any], varying: list[str]) -> list[str]:
    """The parts that tell a row from the others shown: each varying field but the algorithm
    and B_G, the paper's symbol where it has one ("α=0.1", "FMNIST", "lr=0.05")."""
    return [part(f, fields.get(f)) for f in varying if f not in _IN_ROW_LABEL]


def frame_latex(df: pd.DataFrame, float_fmt: str = "{:.2f}") -> str:
    """A plain booktabs LaTeX rendering of a small frame (no jinja2 needed)."""

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return "--" if math.isnan(v) else float_fmt.format(v)
        return str(v).replace("_", "\\_")

    lines = [
        "\\begin{tabular}{" + "l" + "r" * (len(df.columns) - 1) + "}",
        "\\toprule",
        " & ".join(fmt(c) for c in df.columns) + " \\\\",
        "\\midrule",
    ]
    lines += [" & ".join(fmt(v) for v in row) + " \\\\" for row in df.itertuples(index=False)]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


# -- API payloads -> table inputs ------------------------------------------------
def statistic_label(statistic: str, at_round: Any = None, last_round: Any = None) -> str:
    """ "final @199" when the final is not the runs' last round (official protocol), else
    "final"; "best", "top-5 mean" (the rounds differ per run, so none is named)."""
    if statistic == "top5":
        return "top-5 mean"
    if isinstance(at_round, (int, np.integer)) and at_round >= 0 and at_round != last_round:
        return f"{statistic} @{int(at_round)}"
    return statistic


# The fields that place a group in a Table 1 cell; two groups on one cell are told apart by
# the fields beyond these.
CELL_FIELDS = frozenset(
    {
        "algorithm.name",
        "data.name",
        "local_steps",
        "partition.alpha",
        "users_per_round",
        "partition.num_users",
    }
)
SUMMARY_COLUMNS = [
    "dataset",
    "setting",
    "T",
    "algorithm",
    "mean",
    "std",
    "n",
    "label",
    "paper_setting",
    "n_total",
    "varying",
    "statistic",
    "fields",
]


def _summary_row(g: SummaryGroup, member: RunPublic, statistic: str) -> dict[str, Any]:
    """One sweep summary group as a Table 1 input row (its cell from `member`'s spec)."""
    fields = flatten(member.spec)
    setting = setting_of(fields)
    # The statistic names its fields: final_mean, best_std, top5_mean, ...
    mean, std = getattr(g, f"{statistic}_mean"), getattr(g, f"{statistic}_std")
    mean = math.nan if mean is None else float(mean)
    std = math.nan if std is None else float(std)
    if not math.isnan(mean) and mean <= 1.0:
        mean, std = mean * 100, std * 100
    return {
        "dataset": setting.dataset,
        "setting": setting.setting,
        "T": setting.local_steps,
        "algorithm": fields.get("algorithm.name"),
        "mean": mean,
        "std": std,
        "n": g.n_succeeded,
        "label": g.label,
        "paper_setting": setting.setting,
        "n_total": g.n_total,
        "varying": g.varying,
        # What the number is: "final @29" (the round named when not the last), "top-5 mean".
        "statistic": statistic_label(
            statistic, getattr(g, f"{statistic}_round", None), g.last_round
        ),
        "fields": g.fields,
    }


def _tell_apart(rows: list[dict[str, Any]]) -> None:
    """Append to `setting` what tells rows apart (in place): every field beyond the cell's that
    varies across the rows (lr, rounds, profile; the algorithm's own fields are its column's
    business), and for groups that would still land on one cell, all their other fields."""
    varying = varying_fields(r["fields"] for r in rows)
    always = [f for f in varying if f not in CELL_FIELDS and not f.startswith("algorithm.")]
    extras = [{f: r["fields"].get(f) for f in always} for r in rows]
    by_cell: dict[tuple[Any, ...], list[int]] = {}
    for i, r in enumerate(rows):
        cell = (r["dataset"], r["setting"], r["T"], r["algorithm"], group_label(extras[i]))
        by_cell.setdefault(cell, []).append(i)
    for clash in (v for v in by_cell.values() if len(v) > 1):
        for i in clash:
            extras[i] = {k: v for k, v in rows[i]["fields"].items() if k not in CELL_FIELDS}
    for r, extra in zip(rows, extras, strict=True):
        shown = {k: v for k, v in extra.items() if v is not None}
        if shown:
            r["setting"] = f"{r['setting']} [{group_label(shown)}]"


def summary_groups(
    summary: SweepSummary, runs_by_id: dict[str, RunPublic], statistic: str = "top5"
) -> pd.DataFrame:
    """GET /sweeps/{id}/summary groups -> (dataset, setting, T, algorithm, mean, std, n) in %.

    A group lists only the fields that differ, so its Table 1 row comes from a member's spec.
    `statistic` says which number it is, with its round where that is not the last round
    ("final @29", see `statistic_label`).
    Accuracies stored as fractions are scaled to % to sit beside the paper's numbers. n is
    the group's finished runs. A field beyond the cell's (dataset, setting, T, algorithm)
    that varies across the groups is appended to `setting` ("α=0.1 [lr=0.05]"), so two groups
    are never merged into one cell: those that would still share one get all their other
    fields ("α=0.1 [fidelity.profile=paper]"); `paper_setting` keeps the paper's row for the
    lookup. `fields` holds each group's differing fields (the CSV's columns).
    """
    rows = []
    for g in summary.groups:
        ids = g.run_ids + g.all_run_ids
        member = next((runs_by_id[i] for i in ids if i in runs_by_id), None)
        if member is not None:
            rows.append(_summary_row(g, member, statistic))
    _tell_apart(rows)
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def swept_fields(summary: SweepSummary) -> list[str]:
    """The fields that tell a summary's groups apart (what `tune=` can tune), in its order."""
    return list(dict.fromkeys(f for g in summary.groups for f in g.fields))


def _pct(x: float | None) -> float:
    """A fraction as % (NaN for none)."""
    return math.nan if x is None else float(x) * 100


def tune_frame(summary: SweepSummary) -> pd.DataFrame:
    """The choice by validation of a `tune=` summary: a row per group of the other fields with
    the chosen values (a column per tuned field), the budget (configurations given), the
    validation figure chosen by and the test statistic there, mean ± seed std, in %."""
    rows = []
    for g in summary.groups:
        t = g.tune
        if t is None:
            continue
        chosen = t.chosen or {}
        rows.append(
            {
                "group": g.label,
                **{f: chosen.get(f) if t.chosen else "–" for f in t.fields},
                "budget": t.budget,
                "validation": _pct(t.val_mean),
                "test": _pct(t.test_mean),
                "test_seed_std": _pct(t.test_seed_std),
                "n": g.n,
            }
        )
    return pd.DataFrame(rows)


COST_LABELS = {
    "mb_up": "MB up",
    "mb_down": "MB down",
    "mb_total": "MB total",
    "client_train_s": "clients' training (s)",
    "server_s": "server (s)",
}


def cost_frame(summary: SweepSummary) -> pd.DataFrame:
    """Cost beside accuracy: a row per group with each cost per run (docs/metrics.md, Cost)
    as "mean ± seed std" text, and n; "–" where no counted run reports it."""
    rows = []
    for g in summary.groups:
        row: dict[str, Any] = {"group": g.label, "n": g.n}
        for name, label in COST_LABELS.items():
            row[label] = cost_text(getattr(g, f"{name}_mean"), getattr(g, f"{name}_seed_std"))
        rows.append(row)
    return pd.DataFrame(rows, columns=["group", "n", *COST_LABELS.values()])


def cost_text(mean: float | None, sd: float | None) -> str:
    """A cost column as the tables write it: "12.3 ± 0.45" (mean ± seed std), "12.3" without
    a std (one run), "–" where no counted run reports it."""
    if mean is None:
        return "–"
    if sd is not None and abs(sd) < 1e-9 * max(1.0, abs(mean)):
        sd = 0.0  # equal seeds' sums differ in the last bit: no 3.4e-17
    return f"{mean:.3g}" + (f" ± {sd:.2g}" if sd is not None else "")


def _setting_text(setting: dict[str, Any]) -> str:
    """{"data.name": "mnist", "batch_size": 32, ...} -> "mnist · official-cnn · B=32 · T=20 · 10/round · cpu"."""
    parts = [
        str(setting.get("data.name", "?")),
        str(setting.get("model.name", "?")),
        f"B={setting.get('batch_size', '?')}",
        f"T={setting.get('local_steps', '?')}",
        f"{setting.get('users_per_round', '?')}/round",
        str(setting.get("device", "?")),
    ]
    return " · ".join(parts)
