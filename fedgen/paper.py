"""The FedGen paper's published numbers (Zhu et al., ICML 2021): Tables 1-4.

Transcribed once, here, from ../shared/reference/fedgen-method.md §1.1 and §1.3; the
studies (`fedgen.studies`), the CLI and the dashboard all read this copy. Accuracies
are Top-1 test accuracy in %, "mean ± std" (very likely the official top-5 rounds of
each seed pooled over 3 seeds, reference §1.1). Table 3 is ms per local update.
Figure 5 has no numbers in the reference; where a figure-5 setting is also a Table 1
row (CelebA r = 5/25 and 10/25, EMNIST α = 1 at T = 20 and 40) the studies use that row.
"""

from __future__ import annotations

from typing import NamedTuple

from fedgen.algorithms.registry import builtin_algorithms

# Spec algorithm name -> the paper's column label, in Table 1's column order: the built-in
# algorithms' declarations that have one (fedgen.algorithms.builtin).
PAPER_LABELS: dict[str, str] = {
    d.name: d.paper_label for d in builtin_algorithms() if d.paper_label is not None
}

# Spec dataset name -> the paper's row label.
DATASETS: dict[str, str] = {
    "mnist": "MNIST",
    "emnist-letters": "EMNIST",
    "celeba": "CELEBA",
    "fashion-mnist": "Fashion-MNIST",
    "synthetic": "Synthetic",
}

MeanStd = tuple[float, float]


class Setting(NamedTuple):
    """A Table 1 row: dataset label, heterogeneity (α or r) and local steps T."""

    dataset: str
    setting: str  # "α=0.1" or "r=5/10"
    local_steps: int


# Table 1's columns as the paper prints them (its own order, not the registry's).
_ORDER = ["fedavg", "fedprox", "fedensemble", "feddistill", "feddistill-plus", "feddf", "fedgen"]

# Table 1 as the paper prints it, a row per setting, a "mean±std" cell per algorithm in _ORDER.
# The EMNIST "α=10" row is labelled so by the PDF extraction (see the reference's caveat).
_TABLE1_TEXT = """
MNIST   α=0.05   20  87.70±2.07  87.49±2.05  88.85±0.68  70.56±1.24  86.70±2.27  90.02±0.96  91.30±0.74
MNIST   α=0.1    20  90.16±0.59  90.10±0.39  90.78±0.39  64.11±1.36  90.28±0.89  91.11±0.43  93.03±0.32
MNIST   α=1      20  93.84±0.25  93.83±0.29  93.91±0.28  79.88±0.66  94.73±0.15  93.37±0.40  95.52±0.07
CELEBA  r=5/10   20  87.48±0.39  87.67±0.39  88.48±0.23  76.68±1.23  86.37±0.41  87.01±1.00  89.70±0.32
CELEBA  r=5/25   20  89.13±0.25  88.84±0.19  90.22±0.31  74.99±1.57  88.05±0.43  88.93±0.79  89.62±0.34
CELEBA  r=10/25  20  89.12±0.20  89.01±0.33  90.08±0.24  75.88±1.17  88.14±0.37  89.25±0.56  90.29±0.47
EMNIST  α=0.05   20  62.25±2.82  61.93±2.31  64.99±0.35  60.49±1.27  61.56±2.15  70.40±0.79  68.53±1.17
EMNIST  α=0.1    20  66.21±2.43  65.29±2.94  67.53±1.19  50.32±1.39  66.06±3.18  70.94±0.76  72.15±0.21
EMNIST  α=10     20  74.83±0.69  74.24±0.81  74.90±0.80  54.77±0.33  75.55±0.94  74.36±0.40  78.43±0.74
EMNIST  α=1      20  74.83±0.99  74.12±0.88  75.12±1.07  46.19±0.70  75.41±1.05  75.43±0.37  78.48±1.04
EMNIST  α=1      40  77.02±1.09  75.93±0.95  77.68±0.98  46.72±0.73  78.12±0.90  77.58±0.37  78.92±0.73
"""


def _rows(text: str) -> list[list[str]]:
    """The whitespace-separated cells of each line of a transcribed table."""
    return [line.split() for line in text.strip().splitlines()]


def _mean_std(cell: str) -> MeanStd:
    """Parse a "mean±std" cell: "87.70±2.07" -> (87.70, 2.07)."""
    mean, std = cell.split("±")
    return float(mean), float(std)


TABLE1: dict[Setting, dict[str, MeanStd]] = {
    Setting(dataset, setting, int(steps)): dict(zip(_ORDER, map(_mean_std, cells), strict=True))
    for dataset, setting, steps, *cells in _rows(_TABLE1_TEXT)
}

# Table 2: FedGen accuracy by generator preset (EMNIST, α = 0.1); the presets' [d_ε, d_h]
# are the official GENERATORCONFIGS (fedgen.generator_presets). FedAvg is Table 2's own.
TABLE2_FEDAVG: MeanStd = (66.22, 2.58)
TABLE2_FEDGEN: dict[str, MeanStd] = {
    "cnn0": (71.61, 0.25),  # [64, 256]
    "default": (72.09, 0.46),  # [32, 256]
    "cnn1": (72.43, 0.57),  # [32, 128]
    "cnn2": (72.01, 0.76),  # [16, 128]
    "cnn3": (70.98, 0.85),  # [32, 64]
}

# Table 3: ms per local update on EMNIST, α=0.1; FedAvg and FedGen by generator batch size B_G.
TABLE3_FEDAVG: MeanStd = (47.66, 1.68)
TABLE3_FEDGEN: dict[int, MeanStd] = {
    8: (57.20, 2.22),
    16: (57.39, 2.21),
    32: (58.17, 2.24),
    64: (58.91, 2.29),
    128: (60.06, 2.32),
}

# Table 3 by (algorithm, B_G): FedAvg's row has no generator batch size.
TABLE3: dict[tuple[str, int | None], MeanStd] = {
    ("fedavg", None): TABLE3_FEDAVG,
    **{("fedgen", bg): ms for bg, ms in TABLE3_FEDGEN.items()},
}

# Table 4: MNIST, only the predictor (last layer) is shared; α -> algorithm -> mean ± std.
_TABLE4_ORDER = ["fedavg", "feddistill-plus", "feddf", "fedgen"]
_TABLE4_TEXT = """
0.05  59.67±0.76  58.83±0.62  59.62±0.84  63.60±0.63
0.1   58.39±0.74  56.25±0.98  58.38±0.81  65.42±0.29
1     74.49±0.57  74.24±0.60  74.51±0.55  79.72±0.52
10    86.35±0.60  86.89±0.26  86.28±0.69  87.92±0.46
"""
TABLE4: dict[float, dict[str, MeanStd]] = {
    float(alpha): dict(zip(_TABLE4_ORDER, map(_mean_std, cells), strict=True))
    for alpha, *cells in _rows(_TABLE4_TEXT)
}


def format_alpha(alpha: float) -> str:
    """0.1 -> "α=0.1", 1.0 -> "α=1" (as the paper writes it)."""
    return f"α={alpha:g}"
