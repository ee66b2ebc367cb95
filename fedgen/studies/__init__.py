"""Studies: every experiment of the paper as a named, versioned sweep template with a verdict.

A study knows what it reproduces (Table 1-4, the figure-5 studies), the paper's
dataset and settings (the default), how it expands into one sweep (a base spec and a
grid, `fedgen.sweep`), the statistic the paper reports, and the paper's numbers per
cell (`fedgen.paper`). `study_table` turns finished runs into the study's table:
per cell ours (mean ± std, n) beside the paper's, Δ and a verdict.

One job per module; this package re-exports their public names:

- `costs`: the CPU-time estimate of a run (`estimate_cpu_s`, `format_duration`);
- `layouts`: a study's table (rows, columns, the paper's cells) on a dataset;
- `registry`: the studies themselves (`STUDIES`, `get_study`), their overrides and `plan`;
- `verdicts`: finished runs into the study's table, verdicts and markdown.

Overrides: `dataset` (any dataset; the paper's numbers are attached only where the
paper has that row), `seeds` (seeds 0..N-1) and `rounds`.

Pure: pydantic and the standard library; no torch at import. The CLI (`fedgen study`),
the API (/api/v1/studies) and the dashboard's Paper page all use this package.
"""

from fedgen.studies.costs import (
    EST_DATASET_FACTOR,
    EST_MODEL_FACTOR,
    estimate_cpu_s,
    format_duration,
)
from fedgen.studies.layouts import (
    ALL_ALGORITHMS,
    FIG5_ALGORITHMS,
    MODELS,
    SHARE_LABELS,
    STRAGGLER_RATIOS,
    TABLE2_PRESETS,
    TABLE3_BG,
    TABLE4_ALGORITHMS,
    Axis,
    Layout,
    MeanStd,
    preset_label,
)
from fedgen.studies.registry import (
    DATASET_FIELDS,
    MAX_STUDY_SEEDS,
    PAPER_SETTING,
    STUDIES,
    TAG_PREFIX,
    Plan,
    Statistic,
    Study,
    StudyOverrides,
    UnknownStudy,
    get_study,
    plan,
    study_dict,
    study_of_base,
)
from fedgen.studies.verdicts import (
    VERDICTS,
    CellResult,
    RunResult,
    StudyTable,
    Verdict,
    paper_markdown,
    study_table,
    verdict,
)

__all__ = [
    "ALL_ALGORITHMS",
    "DATASET_FIELDS",
    "EST_DATASET_FACTOR",
    "EST_MODEL_FACTOR",
    "FIG5_ALGORITHMS",
    "MAX_STUDY_SEEDS",
    "MODELS",
    "PAPER_SETTING",
    "SHARE_LABELS",
    "STRAGGLER_RATIOS",
    "STUDIES",
    "TABLE2_PRESETS",
    "TABLE3_BG",
    "TABLE4_ALGORITHMS",
    "TAG_PREFIX",
    "VERDICTS",
    "Axis",
    "CellResult",
    "Layout",
    "MeanStd",
    "Plan",
    "RunResult",
    "Statistic",
    "Study",
    "StudyOverrides",
    "StudyTable",
    "UnknownStudy",
    "Verdict",
    "estimate_cpu_s",
    "format_duration",
    "get_study",
    "paper_markdown",
    "plan",
    "preset_label",
    "study_dict",
    "study_of_base",
    "study_table",
    "verdict",
]
