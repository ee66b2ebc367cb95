"""Studies: every experiment of the paper as a named, versioned sweep template with a verdict.

A study knows what it reproduces (Table 1-4, the figure-5 studies), the paper's
dataset and settings (the default), how it expands into one sweep (a base spec and a
grid, `fedgen.sweep`), the statistic the paper reports, and the paper's numbers per
cell (`fedgen.paper`). `study_table` turns finished runs into the study's table:
per cell ours (mean ± std, n) beside the paper's, Δ and a verdict.

One job per module (import them directly; this package re-exports nothing):

- `costs`: the CPU-time estimate of a run (`estimate_cpu_s`, `format_duration`);
- `layouts`: a study's table (rows, columns, the paper's cells) on a dataset;
- `registry`: the studies themselves (`STUDIES`, `get_study`), their overrides and `plan`;
- `tuning`: each method's grid of its own knob, for a study tuned by validation;
- `verdicts`: finished runs into the study's table, verdicts and markdown.

Overrides: `dataset` (any dataset; the paper's numbers are attached only where the
paper has that row), `seeds` (seeds 0..N-1) and `rounds`.

Pure: pydantic and the standard library; no torch at import. The CLI (`fedgen study`),
the API (/api/v1/studies) and the dashboard's Paper page all use this package.
"""
