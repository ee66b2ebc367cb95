"""Pure table logic: seed groups, mean ± std curves, smoothing, time-to-target, paper tables.

Groups follow the one rule of `fedgen.specdict.group_items` (every spec field but the
seed, unless fields are chosen; then `group_warnings` names what still differs inside a
group). The Compare bands (`aggregate`) are live: each round's mean ± std is over the runs
that reached that round, succeeded or still in flight (n per round, `n_changes`); failed
and cancelled runs are left out of them (`STOPPED`). The per-run statistics (time to
target, the sweep tables) count finished (succeeded) runs only; the others are counted
apart (`unfinished`), never in a mean ± std.

"final" has one meaning (`fedgen.stats`): the accuracy of the last round the run's protocol
evaluates, named with its round when that is not the run's last round ("final @199");
"best" likewise (`statistic_label`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dashboard import paper
from fedgen.specdict import (
    differing_fields,
    flatten,
    group_fields,
    group_items,
    group_label,
    varying_within,
)
from fedgen.status import TERMINAL

FINISHED = "succeeded"
# A run that will not change again: an end state, or gone (a link to a deleted run).
ENDED = frozenset({*TERMINAL, "deleted"})
# Ended without finishing: drawn on Compare, but never inside a band.
STOPPED = ENDED - {FINISHED}


def spec_fields(run: dict[str, Any]) -> dict[str, Any]:
    """A run's spec flattened to dotted fields."""
    return flatten(run.get("spec") or {})


def groupable_fields(runs: list[dict[str, Any]], varying_only: bool = False) -> list[str]:
    """Dotted spec fields one can group by (never the seed); optionally only those that differ."""
    flats = [spec_fields(run) for run in runs]
    return differing_fields(flats) if varying_only else group_fields(flats)


def group_labels(runs: list[dict[str, Any]], by: list[str] | None = None) -> dict[str, str]:
    """Run id -> group label. Default: group by every spec field except the seed.

    Runs share a group when all `by` fields are equal. Labels name only fields whose
    values differ among the runs that have them (so FedGen's own parameters do not
    clutter a FedAvg-vs-FedGen label); the algorithm comes first.
    """
    flat = {str(r.get("id")): spec_fields(r) for r in runs}
    keyed = group_items(flat, by)
    shown = differing_fields(flat.values(), by)
    out: dict[str, str] = {}
    seen: list[str] = []
    for ids in keyed.values():
        f = flat[ids[0]]
        # An unset field (None) names nothing: one run with data.root set must not put
        # "data.root=None" into every other run's label.
        label = group_label({k: f[k] for k in shown if f.get(k) is not None})
        if label in seen:
            label += f" #{len(seen) + 1}"
        seen.append(label)
        out.update(dict.fromkeys(ids, label))
    return out


def group_warnings(runs: list[dict[str, Any]], by: list[str] | None = None) -> dict[str, list[str]]:
    """Group label -> the fields its runs still differ in (only groups that mix; {} by default).

    The Compare page shows these as a warning when the user picks the fields to group by.
    """
    if by is None:
        return {}
    labels = group_labels(runs, by)
    members: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        members.setdefault(labels[str(r.get("id"))], []).append(spec_fields(r))
    out = {label: varying_within(flats) for label, flats in members.items()}
    return {label: fields for label, fields in out.items() if fields}


def finished_only(long: pd.DataFrame) -> pd.DataFrame:
    """The rows of succeeded runs (all rows when the frame has no `status` column)."""
    if "status" not in long.columns or long.empty:
        return long
    return long[long["status"] == FINISHED]


def in_bands(long: pd.DataFrame) -> pd.DataFrame:
    """The rows the Compare bands count: succeeded and in-flight runs (not failed/cancelled)."""
    if "status" not in long.columns or long.empty:
        return long
    return long[~long["status"].isin(STOPPED)]


def unfinished(long: pd.DataFrame, group_col: str = "group") -> pd.DataFrame:
    """Per group and status: runs that are not counted (queued, running, failed, cancelled)."""
    cols = [group_col, "status", "runs"]
    if "status" not in long.columns or long.empty:
        return pd.DataFrame(columns=cols)
    rest = long[long["status"] != FINISHED].drop_duplicates("run_id")
    if rest.empty:
        return pd.DataFrame(columns=cols)
    return rest.groupby([group_col, "status"]).size().rename("runs").reset_index()[cols]


def ema(values: np.ndarray | list[float], weight: float) -> np.ndarray:
    """TensorBoard's debiased exponential moving average; NaNs are carried, not smoothed."""
    arr = np.asarray(values, dtype=float)
    if weight <= 0 or arr.size == 0:
        return arr
    out = np.empty_like(arr)
    last, num = 0.0, 0
    for i, v in enumerate(arr):
        if math.isnan(v):
            out[i] = v
            continue
        last = last * weight + (1 - weight) * v
        num += 1
        out[i] = last / (1 - weight**num)
    return out


def smooth(long: pd.DataFrame, weight: float, column: str = "value") -> pd.DataFrame:
    """Apply `ema` to each run's curve (ordered by round)."""
    if weight <= 0 or long.empty:
        return long
    out = long.sort_values(["run_id", "round"]).copy()
    out[column] = out.groupby("run_id", sort=False)[column].transform(
        lambda s: ema(s.to_numpy(), weight)
    )
    return out


def aggregate(long: pd.DataFrame, group_col: str = "group") -> pd.DataFrame:
    """Per group and round: mean, population std (0 for one run), n, and mean wall-clock.

    Succeeded and in-flight runs count, failed and cancelled ones do not (`in_bands`); a
    round's band uses only the runs that reached that round, so a running run joins each
    round as it lands: `n` is per round, and `n_changes` says where it changes.
    """
    cols = ["group", "round", "mean", "std", "n", "wall_s"]
    long = in_bands(long)
    if long.empty:
        return pd.DataFrame(columns=cols)
    g = long.groupby([group_col, "round"])
    out = pd.DataFrame(
        {
            "mean": g["value"].mean(),
            "std": g["value"].std(ddof=0).fillna(0.0),
            "n": g["value"].count(),
            "wall_s": g["wall_s"].mean(),
        }
    ).reset_index()
    return out.rename(columns={group_col: "group"})[cols]


def n_changes(agg: pd.DataFrame) -> pd.DataFrame:
    """Rows of `aggregate` where a group's n differs from its previous round (and its first round).

    The chart annotates these ("n=2 from round 120") so a kink where a seed drops out is
    not read as a change in the algorithm.
    """
    cols = ["group", "round", "n", "wall_s"]
    if agg.empty:
        return pd.DataFrame(columns=cols)
    a = agg.sort_values(["group", "round"])
    prev = a.groupby("group")["n"].shift()
    return a[prev.isna() | (prev != a["n"])][cols].reset_index(drop=True)


def _censored_median(times: list[float], limit: float) -> tuple[float, bool]:
    """Median of event times where inf = not reached (censored beyond `limit`).

    Returns (median, censored): censored when the median falls on a seed that never
    reached the target; the value is then `limit` and reads "> limit".
    """
    ordered = sorted(times)
    k = len(ordered)
    mid = ordered[(k - 1) // 2 : k // 2 + 1]
    if any(math.isinf(v) for v in mid):
        return limit, True
    return float(np.mean(mid)), False


def _fmt_median(value: float, censored: bool, digits: int) -> str:
    if math.isnan(value):
        return "–"
    shown = f"{value:.{digits}f}"
    return f"> {shown}" if censored else shown


def time_to_target(
    long: pd.DataFrame,
    target: float,
    group_col: str = "group",
    members: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per group: "reached k of n", and the median first round / seconds to reach `target`.

    n counts finished runs; a run that never reached the target is censored at its last
    round (and its total seconds), not dropped: the median counts it as beyond, and a
    median that falls on such a run reads "> R" (`round_censored`). Never a mean over the
    seeds that happened to reach the target. Unfinished runs (queued, running, failed,
    cancelled) are counted in `unfinished`, from `members` (run_id, group, status of every
    run, those with no round yet included) when given, else from `long`.
    """
    cols = [
        "group", "runs", "reached", "reached_text", "round_median", "round_median_text",
        "round_censored", "seconds_median", "seconds_median_text", "unfinished",
    ]  # fmt: skip
    if long.empty:
        return pd.DataFrame(columns=cols)
    rest = unfinished(members if members is not None else long, group_col)
    done = finished_only(long)
    rows = []
    for group in sorted(long[group_col].unique(), key=str):
        gdf = done[done[group_col] == group]
        rounds: list[float] = []
        secs: list[float] = []
        last_round, last_sec = 0.0, 0.0
        for _, rdf in gdf.groupby("run_id"):
            rdf = rdf.sort_values("round")
            hit = rdf[rdf["value"] >= target]
            if hit.empty:
                rounds.append(math.inf)
                secs.append(math.inf)
                last_round = max(last_round, float(rdf["round"].iloc[-1]))
                last_sec = max(last_sec, float(np.nan_to_num(rdf["wall_s"].iloc[-1])))
            else:
                rounds.append(float(hit["round"].iloc[0]))
                secs.append(float(hit["wall_s"].iloc[0]))
        n = len(rounds)
        reached = sum(1 for r in rounds if not math.isinf(r))
        r_med, r_cens = _censored_median(rounds, last_round) if n else (math.nan, False)
        known = [x for x in secs if not math.isnan(x)]
        s_med, s_cens = (
            _censored_median(known, last_sec) if len(known) == n and n else (math.nan, False)
        )
        n_rest = int(rest.loc[rest[group_col] == group, "runs"].sum()) if not rest.empty else 0
        rows.append(
            {
                "group": group,
                "runs": n,
                "reached": reached,
                "reached_text": f"{reached} of {n}",
                "round_median": r_med,
                "round_median_text": _fmt_median(r_med, r_cens, 0),
                "round_censored": r_cens,
                "seconds_median": s_med,
                "seconds_median_text": _fmt_median(s_med, s_cens, 1),
                "unfinished": n_rest,
            }
        )
    return pd.DataFrame(rows, columns=cols)


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
    """Our groups (dataset, setting, T, algorithm, mean, std, n in %) beside the paper's numbers."""
    if groups.empty:
        return pd.DataFrame(columns=TABLE1_COLUMNS)
    rows = []
    for rec in groups.to_dict("records"):
        key = paper.Setting(
            rec["dataset"], rec.get("paper_setting") or rec["setting"], int(rec["T"])
        )
        pub = paper.TABLE1.get(key, {}).get(rec["algorithm"])
        pm, ps = pub if pub else (math.nan, math.nan)
        rows.append(
            {
                **{c: rec.get(c) for c in TABLE1_COLUMNS[:7]},
                "paper_mean": pm,
                "paper_std": ps,
                "diff": rec["mean"] - pm,
            }
        )
    return pd.DataFrame(rows, columns=TABLE1_COLUMNS)


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
        columns=[paper.PAPER_LABELS.get(a, a) for a in algs],
    )
    mask = pd.DataFrame(False, index=text.index, columns=text.columns)
    for key in index:
        sub = long[
            (long["dataset"] == key[0]) & (long["setting"] == key[1]) & (long["T"] == key[2])
        ]
        best = sub.loc[sub["mean"].idxmax(), "algorithm"] if sub["mean"].notna().any() else None
        for rec in sub.to_dict("records"):
            col = paper.PAPER_LABELS.get(rec["algorithm"], rec["algorithm"])
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
            paper.PAPER_LABELS.get(a, a): r
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
def table3_frame(timing: pd.DataFrame) -> pd.DataFrame:
    """Ours vs paper ms per local update: FedAvg and FedGen by B_G, with the ratio to FedAvg.

    `timing` has columns algorithm, gen_batch_size (None for non-FedGen), mean_ms, std_ms, n,
    and optionally setting / setting_key: a row's ratio is to the FedAvg row of its own
    setting (NaN when that setting has no FedAvg row). Absolute ms depend on the hardware;
    the ratio to FedAvg is what compares across machines.
    """
    cols = ["row", "ours_ms", "ours_std", "n", "ours_ratio", "paper_ms", "paper_std",
            "paper_ratio", "setting"]  # fmt: skip
    if timing.empty:
        return pd.DataFrame(columns=cols)
    keys = (
        timing["setting_key"] if "setting_key" in timing.columns else pd.Series([""] * len(timing))
    )
    base: dict[str, float] = {}
    for key, rec in zip(keys, timing.to_dict("records"), strict=True):
        if rec["algorithm"] == "fedavg":
            base.setdefault(key, float(rec["mean_ms"]))
    rows = []
    for key, rec in zip(keys, timing.to_dict("records"), strict=True):
        alg, bg = rec["algorithm"], rec.get("gen_batch_size")
        if alg == "fedgen" and bg is not None and not (isinstance(bg, float) and math.isnan(bg)):
            label = f"FedGen B_G={int(bg)}"
            pm, ps = paper.TABLE3_FEDGEN.get(int(bg), (math.nan, math.nan))
        else:
            label = paper.PAPER_LABELS.get(alg, alg)
            pm, ps = paper.TABLE3_FEDAVG if alg == "fedavg" else (math.nan, math.nan)
        ref = base.get(key, math.nan)
        rows.append(
            {
                "row": label,
                "ours_ms": rec["mean_ms"],
                "ours_std": rec.get("std_ms", math.nan),
                "n": int(rec.get("n") or 0),
                "ours_ratio": rec["mean_ms"] / ref if ref and not math.isnan(ref) else math.nan,
                "paper_ms": pm,
                "paper_std": ps,
                "paper_ratio": pm / paper.TABLE3_FEDAVG[0],
                "setting": rec.get("setting", ""),
            }
        )
    return pd.DataFrame(rows, columns=cols)


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


def pca_2d(z: np.ndarray) -> np.ndarray:
    """Project rows of `z` (N x d) on their first two principal components (numpy SVD)."""
    x = np.asarray(z, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0:
        return np.zeros((0, 2))
    x = x - x.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    proj: np.ndarray = np.asarray(x @ vt[:2].T)
    if proj.shape[1] < 2:
        proj = np.pad(proj, ((0, 0), (0, 2 - proj.shape[1])))
    return proj


# -- API payloads -> table inputs ------------------------------------------------
def statistic_label(statistic: str, at_round: Any = None, last_round: Any = None) -> str:
    """ "final @199" when the final is not the runs' last round (official protocol), else
    "final"; "best", "top-5 mean" (the rounds differ per run, so none is named)."""
    if statistic == "top5":
        return "top-5 mean"
    if isinstance(at_round, (int, np.integer)) and at_round >= 0 and at_round != last_round:
        return f"{statistic} @{int(at_round)}"
    return statistic


def summary_groups(
    summary: dict[str, Any], runs_by_id: dict[str, dict[str, Any]], statistic: str = "top5"
) -> pd.DataFrame:
    """GET /sweeps/{id}/summary groups -> (dataset, setting, T, algorithm, mean, std, n) in %.

    A group lists only the fields that differ, so its Table 1 row comes from a member's spec.
    `statistic` says which number it is, with its round where that is not the last round
    ("final @29", see `statistic_label`).
    Accuracies stored as fractions are scaled to % to sit beside the paper's numbers. n is
    the group's finished runs. Two groups that would share a Table 1 cell (same dataset,
    setting, T and algorithm but another profile, rounds, ...) are never merged: their
    `setting` gets the differing fields appended ("α=0.1 [fidelity.profile=paper]") and
    `paper_setting` keeps the paper's row for the lookup.
    """
    cols = ["dataset", "setting", "T", "algorithm", "mean", "std", "n", "label", "paper_setting",
            "n_total", "varying", "statistic"]  # fmt: skip
    rows = []
    for g in summary.get("groups") or []:
        ids = list(g.get("run_ids") or []) + list(g.get("all_run_ids") or [])
        member = next((runs_by_id[i] for i in ids if i in runs_by_id), None)
        if member is None:
            continue
        fields = spec_fields(member)
        setting = paper.setting_of(fields)
        mean, std = g.get(f"{statistic}_mean"), g.get(f"{statistic}_std")
        mean = math.nan if mean is None else float(mean)
        std = math.nan if std is None else float(std)
        if not math.isnan(mean) and mean <= 1.0:
            mean, std = mean * 100, std * 100
        rows.append(
            {
                "dataset": setting.dataset,
                "setting": setting.setting,
                "T": setting.local_steps,
                "algorithm": fields.get("algorithm.name"),
                "mean": mean,
                "std": std,
                "n": int(g.get("n_succeeded", g.get("n")) or 0),
                "label": g.get("label"),
                "paper_setting": setting.setting,
                "n_total": int(g.get("n_total", g.get("n")) or 0),
                "varying": list(g.get("varying") or []),
                # What the number is: "final @29" (the round named when not the last), "top-5 mean".
                "statistic": statistic_label(
                    statistic, g.get(f"{statistic}_round"), g.get("last_round")
                ),
                "_fields": g.get("fields") or {},
            }
        )
    # Groups that land on one cell: name what tells them apart (fields beyond the cell's own).
    cell_of = {
        "algorithm.name", "data.name", "local_steps", "partition.alpha", "users_per_round",
        "partition.num_users",
    }  # fmt: skip
    by_cell: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        by_cell.setdefault((r["dataset"], r["setting"], r["T"], r["algorithm"]), []).append(r)
    for clash in (v for v in by_cell.values() if len(v) > 1):
        for r in clash:
            extra = {k: v for k, v in r["_fields"].items() if k not in cell_of}
            r["setting"] = f"{r['setting']} [{group_label(extra)}]"
    return pd.DataFrame(rows, columns=cols)


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


def timing_rows(payload: dict[str, Any]) -> pd.DataFrame:
    """GET /timing -> one row per group: algorithm, gen_batch_size, setting, mean_ms, std_ms, n.

    Rows keep the setting they were measured in (`setting_key` matches rows of one setting,
    whatever the algorithm) so Table 3 never compares FedGen on one dataset with FedAvg on another.
    """
    cols = ["algorithm", "gen_batch_size", "mean_ms", "std_ms", "n", "setting", "setting_key"]
    rows: list[dict[str, Any]] = []
    for r in payload.get("rows") or []:
        if r.get("mean_ms") is None:
            continue
        rows.append(
            {
                "algorithm": r.get("algorithm"),
                "gen_batch_size": r.get("gen_batch_size"),
                "mean_ms": r["mean_ms"],
                "std_ms": r.get("std_ms"),
                "n": int(r.get("n") or 0),
                "setting": _setting_text(r.get("setting") or {}),
                "setting_key": r.get("setting_key") or "",
            }
        )
    return pd.DataFrame(rows, columns=cols)
