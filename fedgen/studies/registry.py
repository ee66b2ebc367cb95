"""The studies: every experiment of the paper as a named, versioned sweep template.

A `Study` knows what it reproduces, the paper's dataset (the default), its layout
(`fedgen.studies.layouts`) and the statistic the paper reports. `plan` expands a study
with its overrides (`StudyOverrides`: dataset, seeds, rounds) into one sweep at the
paper's setting (`PAPER_SETTING`); `study_of_base` finds a sweep's study from its tag.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fedgen.data.registry import dataset_names
from fedgen.data_spec import StudyDatasetName
from fedgen.spec import ExperimentSpec, SpecError
from fedgen.spec_base import MAX_ROUNDS
from fedgen.specdict import merge
from fedgen.studies.costs import estimate_cpu_s, estimate_trainings_cpu_s
from fedgen.studies.layouts import (
    Layout,
    layout_cifar10,
    layout_delay,
    layout_mlp_vs_cnn,
    layout_stragglers,
    layout_table1,
    layout_table1_extended,
    layout_table1_tuned,
    layout_table2,
    layout_table3,
    layout_table4,
)
from fedgen.sweep import MAX_SWEEP_RUNS, SweepSpec, expand

MAX_STUDY_SEEDS = 10
TAG_PREFIX = "study:"

Statistic = Literal["top5", "ms_per_update", "val_best"]
# Which ± a study's table shows: its statistic's own std (the paper's: top-5 pooled over
# seeds, ms pooled over rounds), or the sample std over seeds of each seed's own figure.
StdKind = Literal["official", "seed"]

# The paper's experimental setting (reference §1.2): 20 users, r = 50 %, T = 20, B = 32,
# at most 50 % of the training data. Rows and columns override what they vary.
PAPER_SETTING: dict[str, Any] = {
    "partition": {"num_users": 20, "sampling_ratio": 0.5},
    "users_per_round": 10,
    "local_steps": 20,
    "batch_size": 32,
}
# Per-dataset additions: the 20-user Dirichlet split at α <= 0.1 finds every user 10
# samples only with about 10k synthetic samples (the default 2,000 exhausts the re-draws).
DATASET_FIELDS: dict[str, dict[str, Any]] = {"synthetic": {"synthetic_samples": 10_000}}


@dataclass(frozen=True)
class Study:
    """A named, versioned sweep template with the paper's numbers and statistic."""

    name: str
    version: int
    title: str
    reproduces: str
    paper_dataset: str
    statistic: Statistic
    layout: Callable[[str], Layout]
    notes: tuple[str, ...] = ()
    default_seeds: int = 3
    default_rounds: int = 200
    table_std: StdKind = "official"

    @property
    def tag(self) -> str:
        """The tag every run of this study's sweeps carries: "study:table1@v1"."""
        return f"{TAG_PREFIX}{self.name}@v{self.version}"

    def describe(self, dataset: str | None = None) -> str:
        """What the study reproduces, on `dataset` (default the paper's): a text naming
        `{columns}` gets the layout's own column labels, so it cannot disagree with them
        (Table 2's presets have other [d_ε, d_h] per dataset family)."""
        if "{columns}" not in self.reproduces:
            return self.reproduces
        on = dataset or self.paper_dataset
        return self.reproduces.format(dataset=on, columns=", ".join(self.layout(on).columns.labels))

    @property
    def std_text(self) -> str:
        """Which ± the table shows, in words."""
        if self.table_std == "seed":
            return (
                "± is the seed std: the sample std (ddof 1) over seeds of each seed's own "
                "figure (seed_std); std is the statistic's own, beside it"
            )
        return (
            "± is the study's official std (std: the paper's way of computing it); seed_std "
            "(ddof 1 over each seed's own figure) is beside it"
        )

    @property
    def statistic_text(self) -> str:
        """The statistic in words."""
        if self.statistic == "val_best":
            return (
                "val_best: test accuracy at each seed's round of best validation accuracy "
                "(partition.val_fraction), mean over seeds in %; a tuned cell reports the "
                "configuration of its grid with the best mean validation accuracy"
            )
        if self.statistic == "ms_per_update":
            return (
                "ms per local update (the runner's time_user_ms: wall time per selected user "
                "per round), mean ± std over rounds pooled over seeds; verdicts compare the "
                "ratio to FedAvg, since absolute ms depend on the machine"
            )
        return (
            "top-5: the 5 best rounds of each seed pooled over seeds, mean ± std in % "
            "(the official plotting code's number, reference §1.1)"
        )

    @property
    def higher_is_better(self) -> bool:
        """Accuracy: higher is better; time: lower is better."""
        return self.statistic != "ms_per_update"


STUDIES: dict[str, Study] = {
    s.name: s
    for s in (
        Study(
            "table1",
            1,
            "Table 1: accuracy of seven algorithms",
            "Table 1: FedAvg, FedProx, FedEnsemble, FedDistill, FedDistill+, FedDF (the paper's "
            "FedDFusion) and FedGen on each of the dataset's settings (MNIST α = 0.05, 0.1, 1; EMNIST α = 0.05, 0.1, 10 and "
            "α = 1 at T = 20, 40; CelebA r = 5/10, 5/25, 10/25), 3 seeds.",
            "mnist",
            "top5",
            layout_table1,
            (
                "Datasets without a Table 1 row (Fashion-MNIST, synthetic) run MNIST's α settings; "
                "their cells have no paper number.",
                "EMNIST's 'α = 10' row is labelled so by the PDF extraction (reference §1.1 caveat).",
            ),
        ),
        Study(
            "table1-extended",
            1,
            "Table 1 extended: the non-IID baselines, both test protocols",
            "Table 1 extended (not in the paper): FedAvg, FedProx, FedGen and FedDFusion "
            "beside SCAFFOLD, FedDyn, MOON, FedNova, FedAdam, FedYogi and FedAvgM "
            "(default Fashion-MNIST), "
            "α = 0.05, 0.1, 1 at T = 20, each under the per-user and the global test protocol "
            "(partition.test_protocol), 3 seeds, the paper's other settings.",
            "fashion-mnist",
            "top5",
            layout_table1_extended,
            (
                "Hyperparameters, as each paper recommends for a small CNN (FedProx, FedGen and "
                "FedDFusion as in Table 1): SCAFFOLD η_g = 1 (Karimireddy et al. run the global "
                "step at 1); FedDyn α = 0.01 (Acar et al.'s usual value of 0.1, 0.01, 0.001); "
                "MOON μ = 1, τ = 0.5 (Li et al.: τ = 0.5 throughout, μ = 1 on CIFAR-100 and "
                "Tiny-ImageNet, 5 on CIFAR-10); FedNova local_steps_spread 12, τ_i uniform in "
                "8..20 (Wang et al. draw 2 to 5 local epochs per client, a 0.4-1 ratio); FedAdam "
                "and FedYogi η = 0.01, τ = 10⁻³, β₁ = 0.9, β₂ = 0.99 (Reddi et al.'s fixed β's "
                "and the neighbourhood of their EMNIST-CNN grid optimum); FedAvgM β = 0.9, "
                "η_s = 1 (Hsu et al.'s momentum; Reddi et al.'s FedAvgM baseline).",
                "The paper's Table 1 numbers (per-user protocol) are attached to the per-user "
                "rows where the paper has the dataset (MNIST, EMNIST, CelebA); Fashion-MNIST has "
                "none.",
                "Where the order of methods changes between the two protocols is the study's "
                "question: compare each α's two rows.",
                "Runs use execution: batched: a batchable algorithm trains a round's clients as "
                "one stacked computation, the others fall back to sequential and record why "
                "(info.json: execution_reason). Measured 2026-12-03 on the 2-core VM with one "
                "torch thread (bench/round_speed.py --threads 1 --execution "
                "auto,sequential,batched): batched 1.76x faster per round than sequential for "
                "FedAvg, 1.72x for FedGen.",
                "`fedgen study run` trains once for the two protocols of each (algorithm, α, "
                "seed) and evaluates that training under both (fedgen.runner.run_twins; each "
                "run keeps its own directory); FedDF's early stopping validates as the run "
                "evaluates, so its two protocols train separately.",
            ),
        ),
        Study(
            "table1-tuned",
            1,
            "Table 1 extended, tuned by validation: every method over a grid of its own knob",
            "Table 1 extended, tuned (not in the paper): the extended table's eleven "
            "methods, α = 0.05, 0.1, 1 at T = 20 under the per-user and the global test "
            "protocol (default Fashion-MNIST), with a validation split (partition.val_fraction "
            "0.1); each method over 3 values of its own main knob, 5 seeds; a cell reports the "
            "configuration with the best mean validation accuracy, by val_best ± seed std.",
            "fashion-mnist",
            "val_best",
            layout_table1_tuned,
            (
                "Grids (fedgen.studies.tuning.TUNING_GRIDS), 3 values each so every method has "
                "the same budget, the other parameters as Table 1 extended: FedAvg and FedNova "
                "lr 0.003, 0.01, 0.03; FedProx μ 0.001, 0.01, 0.1; FedGen α₀ "
                "(client_teacher_weight) 1, 3, 10; FedDFusion distill_lr 3e-4, 1e-3, 3e-3; "
                "SCAFFOLD η_g 0.5, 1, 2; FedDyn α 0.001, 0.01, 0.1; MOON μ 0.1, 1, 5; FedAdam "
                "and FedYogi η 0.001, 0.01, 0.1; FedAvgM η_s 0.1, 0.3, 1.",
                "Size: 6 rows x 11 methods x 3 values x 5 seeds = 990 runs on Fashion-MNIST "
                "(`fedgen study run` trains each (method, value, α, seed) once for its two "
                "protocols); the five-row EMNIST table is over the 1,000-run limit of a sweep.",
                "The table tunes each cell itself (GET /studies/table1-tuned/results: `tuned` "
                "and `budget` per cell). The same choice from the sweep: GET "
                "/sweeps/{id}/summary?statistic=val_best&tune=lr,algorithm.mu,"
                "algorithm.client_teacher_weight,algorithm.distill_lr,algorithm.global_lr,"
                "algorithm.alpha,algorithm.server_lr.",
                "No paper numbers: the paper's are top-5 rounds chosen on the test set (study "
                "table1-extended shows them beside the same rows and columns).",
                "The validation split is 10% of each user's training samples, so every method "
                "trains on 90% of what Table 1's runs see.",
            ),
            default_seeds=5,
            table_std="seed",
        ),
        Study(
            "table2",
            1,
            "Table 2: generator designs",
            "Table 2: FedGen's generator presets [d_ε, d_h] against FedAvg (the reference) at "
            "α = 0.1; the paper ran it on EMNIST. On {dataset} the columns are: {columns}.",
            "emnist-letters",
            "top5",
            layout_table2,
            (
                "A preset's dimensions depend on the dataset family (official GENERATORCONFIGS); "
                "the column label shows them.",
            ),
        ),
        Study(
            "table3",
            1,
            "Table 3: local training time vs B_G",
            "Table 3: ms per local update of FedGen with B_G = 8, 16, 32, 64, 128 synthetic "
            "samples per step, against FedAvg, on EMNIST α = 0.1.",
            "emnist-letters",
            "ms_per_update",
            layout_table3,
            (
                "Absolute ms depend on the machine: verdicts compare the ratio to FedAvg "
                "(paper: 57.20-60.06 / 47.66 = 1.20-1.26x), the paper's ± divided by its FedAvg mean.",
                "Runs started in parallel (--jobs > 1) share the cores; all configurations share "
                "them alike, so the ratio stays fair but absolute ms rise.",
            ),
        ),
        Study(
            "table4",
            1,
            "Table 4: sharing the predictor only",
            "Table 4: FedAvg, FedDistill+, FedDFusion and FedGen sharing only the last layer "
            "(predictor) vs the whole model, on MNIST α = 0.05, 0.1, 1, 10.",
            "mnist",
            "top5",
            layout_table4,
            ("Whole-model cells carry Table 1's MNIST numbers; Table 1 has no α = 10 row.",),
        ),
        Study(
            "fig5-stragglers",
            1,
            "Figure 5b: active-user ratio r",
            "Figure 5b: the straggler study on CelebA, active-user ratio r from 0.2 to 0.9 "
            "(25 users; 20 on other datasets).",
            "celeba",
            "top5",
            layout_stragglers,
            (
                "The figure has no numbers in the reference; r = 5/25 and 10/25 carry Table 1's "
                "CelebA rows.",
                "r = 0.9 of 25 users is rounded to 23/25.",
                "Algorithms: FedAvg, FedProx, FedDistill+, FedDFusion, FedGen (our choice: the "
                "reference does not list the figure's curves).",
            ),
        ),
        Study(
            "fig5-mlp-vs-cnn",
            1,
            "Figure 5c/d: MLP vs CNN (here: two CNNs)",
            "Figures 5c, 5d: the classifier architecture on MNIST. The paper compares an MLP "
            "with a CNN; neither the official code nor this project has the MLP (the official "
            "mnist_cnn1/2 configs are unreachable, reference §3), so this study compares the two "
            "CNNs the project has: official-cnn vs mcmahan-cnn.",
            "mnist",
            "top5",
            layout_mlp_vs_cnn,
            (
                "There is no MLP model in this code: the study is official-cnn vs mcmahan-cnn.",
                "The figure has no numbers in the reference; the official-cnn row carries Table 1's "
                "MNIST α = 0.1 row.",
                "Algorithms: FedAvg, FedProx, FedDistill+, FedDFusion, FedGen (our choice).",
            ),
        ),
        Study(
            "fig5-delay",
            1,
            "Figure 5e/f: communication delay T",
            "Figures 5e, 5f: local steps T = 20 vs T = 40 on EMNIST α = 1.",
            "emnist-letters",
            "top5",
            layout_delay,
            (
                "The figure has no numbers in the reference; both rows carry Table 1's EMNIST "
                "α = 1 rows (T = 20 and T = 40).",
                "Algorithms: FedAvg, FedProx, FedDistill+, FedDFusion, FedGen (our choice).",
            ),
        ),
        Study(
            "cifar10",
            1,
            "CIFAR-10 with ResNet-18: seven algorithms (beyond the paper)",
            "CIFAR-10 with ResNet-18 (GroupNorm, Hsieh et al. 2020), not in the FedGen paper: "
            "FedAvg, FedProx, SCAFFOLD, FedDyn, MOON, FedDFusion and FedGen at α = 0.1 and 0.5, "
            "3 seeds, the paper's other settings (20 users, 10 a round, T = 20, B = 32).",
            "cifar10",
            "top5",
            layout_cifar10,
            (
                "The question every FedGen follow-up asks (FedFTG, DENSE, FedCDA, FedDF's own "
                "paper report CIFAR-10 with ResNet-style models): does FedGen's edge hold "
                "beyond 28x28 images and small CNNs? No paper numbers to compare against.",
                "Training batches use data.augment crop-flip (CIFAR's default: a 32x32 crop of "
                "the image padded by 4 and a horizontal flip), test images none.",
                "Hyperparameters as Table 1 extended's (SCAFFOLD η_g = 1, FedDyn α = 0.01), "
                "MOON μ = 5 (Li et al.'s CIFAR-10 value), τ = 0.5.",
                "Runs only where a worker has CIFAR-10's files (<root>/cifar-10-batches-py, "
                "or data.download on a machine with internet); the Paper page says so when "
                "no live worker offers cifar10. ResNet-18 is costly on a CPU: the estimate "
                "is the study's CPU time on one core.",
            ),
        ),
    )
}


class UnknownStudy(KeyError):
    """No study of that name; the message names the known ones."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.message = f"unknown study {name!r}; known studies: {', '.join(STUDIES)}"
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


def get_study(name: str) -> Study:
    """The study of that name, or UnknownStudy."""
    try:
        return STUDIES[name]
    except KeyError:
        raise UnknownStudy(name) from None


class StudyOverrides(BaseModel):
    """What a study run may change; None keeps the paper's original."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: StudyDatasetName | None = Field(
        None, description="Any dataset loaded by its name alone (not folder); default: the paper's."
    )
    seeds: int | None = Field(
        None, ge=1, le=MAX_STUDY_SEEDS, description="Run seeds 0..seeds-1; default 3."
    )
    rounds: int | None = Field(None, ge=1, le=MAX_ROUNDS, description="Default 200.")


@dataclass(frozen=True)
class Plan:
    """A study resolved for a dataset, seeds and rounds: its sweep, runs and CPU estimate."""

    study: Study
    dataset: str
    seeds: int
    rounds: int
    layout: Layout
    sweep: SweepSpec
    specs: list[ExperimentSpec]

    @property
    def runs(self) -> int:
        """Number of runs the sweep expands to."""
        return len(self.specs)

    @property
    def est_cpu_s(self) -> float:
        """Estimated CPU seconds on one core, all runs (an estimate: `estimate_cpu_s`)."""
        return sum(estimate_cpu_s(s) for s in self.specs)

    @property
    def est_local_cpu_s(self) -> float:
        """The estimate as `fedgen study run` runs the study: runs that differ only in the
        test protocol share one training (`estimate_trainings_cpu_s`); the lab's workers
        run every run on its own (`est_cpu_s`)."""
        return estimate_trainings_cpu_s(self.specs)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the study, its overrides, the sweep and the paper's table."""
        return {
            **study_dict(self.study, self.dataset),
            "dataset": self.dataset,
            "seeds": self.seeds,
            "rounds": self.rounds,
            "runs": self.runs,
            "est_cpu_s": round(self.est_cpu_s, 1),
            "sweep": {"name": self.sweep.name, "base": self.sweep.base, "grid": self.sweep.grid},
            "rows": self.layout.rows.labels,
            "columns": self.layout.columns.labels,
            "paper": [
                {"row": r, "column": c, "mean": m, "std": s}
                for (r, c), (m, s) in self.layout.paper.items()
            ],
        }


def study_dict(study: Study, dataset: str | None = None) -> dict[str, Any]:
    """The definition of a study; its description on `dataset` (default the paper's)."""
    return {
        "name": study.name,
        "version": study.version,
        "tag": study.tag,
        "title": study.title,
        "reproduces": study.describe(dataset),
        "paper_dataset": study.paper_dataset,
        "datasets": list(dataset_names()),
        "statistic": study.statistic,
        "statistic_text": study.statistic_text,
        "std_kind": study.table_std,
        "std_text": study.std_text,
        "tuned": list(study.layout(dataset or study.paper_dataset).tuned),
        "higher_is_better": study.higher_is_better,
        "notes": list(study.notes),
        "defaults": {
            "dataset": study.paper_dataset,
            "seeds": study.default_seeds,
            "rounds": study.default_rounds,
        },
    }


def plan(study: Study | str, overrides: StudyOverrides | None = None) -> Plan:
    """The study's sweep for the overrides (the paper's original where None)."""
    s = get_study(study) if isinstance(study, str) else study
    o = overrides or StudyOverrides()
    dataset = o.dataset or s.paper_dataset
    seeds = o.seeds or s.default_seeds
    rounds = o.rounds or s.default_rounds
    layout = s.layout(dataset)
    base: dict[str, Any] = merge(
        {
            "data": {"name": dataset, **DATASET_FIELDS.get(dataset, {})},
            **PAPER_SETTING,
            "rounds": rounds,
            "tags": [s.tag],
        },
        layout.base,  # merged: a layout's partition.val_fraction keeps the paper's users
    )
    columns = layout.column_grid or layout.columns.grid_item()
    grid: dict[str, list[Any]] = dict([layout.rows.grid_item(), columns])
    per_seed = math.prod(len(values) for values in grid.values())
    if per_seed * seeds > MAX_SWEEP_RUNS:
        # Said about the field the member sets, not about a grid they never wrote.
        most = MAX_SWEEP_RUNS // per_seed
        fits = f"at most {most} seed{'s' if most != 1 else ''}" if most else "not one seed fits"
        why = (
            f"study {s.name} on {dataset} is {per_seed} runs a seed: {seeds} seeds make "
            f"{per_seed * seeds} runs, more than the limit {MAX_SWEEP_RUNS} of a sweep ({fits})"
        )
        raise SpecError([("seeds", why)], "study")
    grid["seed"] = list(range(seeds))
    sweep = SweepSpec(
        name=f"study {s.name} v{s.version} · {dataset} · seeds={seeds} · rounds={rounds}",
        base=base,
        grid=grid,
    )
    return Plan(s, dataset, seeds, rounds, layout, sweep, expand(sweep))


def study_of_base(base: dict[str, Any]) -> tuple[str, int] | None:
    """(study name, version) of a sweep's base spec, from its study tag; None if not a study."""
    for tag in base.get("tags") or []:
        if isinstance(tag, str) and tag.startswith(TAG_PREFIX) and "@v" in tag:
            name, _, version = tag[len(TAG_PREFIX) :].rpartition("@v")
            if version.isdigit():
                return name, int(version)
    return None
