"""Pure table logic: seed groups, mean ± std curves, smoothing, time-to-target, paper tables."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dashboard import paper
from fedgen.specdict import differing_fields, flatten, group_fields, group_key, group_label


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
    keys = by if by is not None else groupable_fields(runs)
    shown = differing_fields(flat.values(), keys)
    labels: dict[str, str] = {}
    out: dict[str, str] = {}
    for run_id, f in flat.items():
        key = group_key(f, keys)
        if key not in labels:
            label = group_label({k: f[k] for k in shown if k in f})
            if label in labels.values():
                label += f" #{len(labels) + 1}"
            labels[key] = label
        out[run_id] = labels[key]
    return out


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
    """Per group and round: mean, population std (0 for one run), n, and mean wall-clock."""
    cols = ["group", "round", "mean", "std", "n", "wall_s"]
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


def time_to_target(long: pd.DataFrame, target: float, group_col: str = "group") -> pd.DataFrame:
    """Per group: how many runs reach `target`, and mean ± std of the first round / seconds."""
    cols = ["group", "runs", "reached", "round_mean", "round_std", "seconds_mean", "seconds_std"]
    rows = []
    if long.empty:
        return pd.DataFrame(columns=cols)
    for group, gdf in long.groupby(group_col):
        hit_rounds, hit_secs = [], []
        for _, rdf in gdf.groupby("run_id"):
            hit = rdf[rdf["value"] >= target].sort_values("round")
            if not hit.empty:
                hit_rounds.append(float(hit["round"].iloc[0]))
                hit_secs.append(float(hit["wall_s"].iloc[0]))
        rows.append(
            {
                "group": group,
                "runs": gdf["run_id"].nunique(),
                "reached": len(hit_rounds),
                "round_mean": float(np.mean(hit_rounds)) if hit_rounds else math.nan,
                "round_std": float(np.std(hit_rounds)) if hit_rounds else math.nan,
                "seconds_mean": float(np.nanmean(hit_secs))
                if hit_secs and not np.all(np.isnan(hit_secs))
                else math.nan,
                "seconds_std": float(np.nanstd(hit_secs))
                if hit_secs and not np.all(np.isnan(hit_secs))
                else math.nan,
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
        key = paper.Setting(rec["dataset"], rec["setting"], int(rec["T"]))
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
    algs = [a for a in paper.ALGORITHMS if a in set(long["algorithm"])]
    algs += sorted(set(long["algorithm"]) - set(algs))
    index = list(dict.fromkeys(zip(long["dataset"], long["setting"], long["T"], strict=True)))
    text = pd.DataFrame(
        "",
        index=pd.MultiIndex.from_tuples(index, names=["dataset", "setting", "T"]),
        columns=[paper.ALGORITHMS.get(a, a) for a in algs],
    )
    mask = pd.DataFrame(False, index=text.index, columns=text.columns)
    for key in index:
        sub = long[
            (long["dataset"] == key[0]) & (long["setting"] == key[1]) & (long["T"] == key[2])
        ]
        best = sub.loc[sub["mean"].idxmax(), "algorithm"] if sub["mean"].notna().any() else None
        for rec in sub.to_dict("records"):
            col = paper.ALGORITHMS.get(rec["algorithm"], rec["algorithm"])
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
            paper.ALGORITHMS.get(a, a): r
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

    `timing` has columns algorithm, gen_batch_size (None for non-FedGen), mean_ms, std_ms, n.
    Absolute ms depend on the hardware; the ratio to FedAvg is what compares across machines.
    """
    cols = ["row", "ours_ms", "ours_std", "n", "ours_ratio", "paper_ms", "paper_std", "paper_ratio"]
    if timing.empty:
        return pd.DataFrame(columns=cols)
    avg = timing[timing["algorithm"] == "fedavg"]
    base = float(avg["mean_ms"].iloc[0]) if not avg.empty else math.nan
    rows = []
    for rec in timing.to_dict("records"):
        alg, bg = rec["algorithm"], rec.get("gen_batch_size")
        if alg == "fedgen" and bg is not None and not (isinstance(bg, float) and math.isnan(bg)):
            label = f"FedGen B_G={int(bg)}"
            pm, ps = paper.TABLE3_FEDGEN.get(int(bg), (math.nan, math.nan))
        else:
            label = paper.ALGORITHMS.get(alg, alg)
            pm, ps = paper.TABLE3_FEDAVG if alg == "fedavg" else (math.nan, math.nan)
        rows.append(
            {
                "row": label,
                "ours_ms": rec["mean_ms"],
                "ours_std": rec.get("std_ms", math.nan),
                "n": rec.get("n"),
                "ours_ratio": rec["mean_ms"] / base if base and not math.isnan(base) else math.nan,
                "paper_ms": pm,
                "paper_std": ps,
                "paper_ratio": pm / paper.TABLE3_FEDAVG[0],
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
def summary_groups(
    summary: dict[str, Any], runs_by_id: dict[str, dict[str, Any]], statistic: str = "top5"
) -> pd.DataFrame:
    """GET /sweeps/{id}/summary groups -> (dataset, setting, T, algorithm, mean, std, n) in %.

    A group lists only the fields that differ, so its Table 1 row comes from a member's spec.
    Accuracies stored as fractions are scaled to % to sit beside the paper's numbers.
    """
    cols = ["dataset", "setting", "T", "algorithm", "mean", "std", "n", "label"]
    rows = []
    for g in summary.get("groups") or []:
        member = next((runs_by_id[i] for i in g.get("run_ids") or [] if i in runs_by_id), None)
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
                "n": g.get("n_succeeded", g.get("n")),
                "label": g.get("label"),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def timing_rows(payload: dict[str, Any]) -> pd.DataFrame:
    """GET /timing -> (algorithm, gen_batch_size, mean_ms, std_ms, n) with FedGen split by B_G."""
    cols = ["algorithm", "gen_batch_size", "mean_ms", "std_ms", "n"]
    rows: list[dict[str, Any]] = []
    by_bg = payload.get("fedgen_by_gen_batch_size") or []
    for a in payload.get("algorithms") or []:
        if a.get("mean_ms") is None or (a["algorithm"] == "fedgen" and by_bg):
            continue
        rows.append(
            {"algorithm": a["algorithm"], "gen_batch_size": None, "mean_ms": a["mean_ms"],
             "std_ms": a.get("std_ms"), "n": a.get("n_runs")}
        )  # fmt: skip
    for b in by_bg:
        if b.get("mean_ms") is not None:
            rows.append(
                {"algorithm": "fedgen", "gen_batch_size": b["gen_batch_size"], "mean_ms": b["mean_ms"],
                 "std_ms": b.get("std_ms"), "n": b.get("n_runs")}
            )  # fmt: skip
    return pd.DataFrame(rows, columns=cols)
