"""Tuning grids: each method's own knob, the same number of values for every method.

A comparison tuned by validation is fair only when every method gets the same budget: here
`GRID_SIZE` values of its main knob, chosen by the best mean validation figure per cell
(`fedgen.studies.verdicts`). The values bracket the default each paper recommends for a
small CNN, one step either side on a log scale:

- FedAvg, FedEnsemble, FedNova: the clients' learning rate `lr` around the paper setting's
  0.01 (FedEnsemble trains as FedAvg; FedNova's normalisation leaves `lr` its main knob);
- FedProx μ: Li et al. 2020 search {0.001, 0.01, 0.1, 1}; the first three;
- FedDistill, FedDistill+ `reg_alpha` (weight of the KL to the label logits) around 1;
- FedDFusion `distill_lr` around Lin et al.'s Adam 10⁻³;
- FedGen α₀ `client_teacher_weight`: the paper's unit weight (Eq. 5), the official code's
  10 (generative_alpha), and 3 between;
- SCAFFOLD η_g around 1 (Karimireddy et al.); FedDyn α in Acar et al.'s {0.1, 0.01, 0.001};
  MOON μ in Li et al.'s {0.1, 1, 5}; FedAdam, FedYogi η in Reddi et al.'s neighbourhood
  {10⁻³, 10⁻², 10⁻¹}; FedAvgM η_s up to Hsu et al.'s 1 at momentum 0.9.

The non-IID baselines keep Table 1 extended's other hyperparameters (`fixed`:
`layouts.TABLE1_EXTENDED`). `layouts.layout_table1_tuned` is the study that uses them.
Pure: no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedgen.spec import ExperimentSpec

GRID_SIZE = 3
DEFAULT_LR: float = ExperimentSpec.model_fields["lr"].default

# method -> (the dotted spec field it tunes, its GRID_SIZE values, low to high)
TUNING_GRIDS: dict[str, tuple[str, tuple[float, ...]]] = {
    "fedavg": ("lr", (0.003, 0.01, 0.03)),
    "fedensemble": ("lr", (0.003, 0.01, 0.03)),
    "fednova": ("lr", (0.003, 0.01, 0.03)),
    "fedprox": ("algorithm.mu", (0.001, 0.01, 0.1)),
    "feddistill": ("algorithm.reg_alpha", (0.1, 1.0, 10.0)),
    "feddistill-plus": ("algorithm.reg_alpha", (0.1, 1.0, 10.0)),
    "feddf": ("algorithm.distill_lr", (3e-4, 1e-3, 3e-3)),
    "fedgen": ("algorithm.client_teacher_weight", (1.0, 3.0, 10.0)),
    "scaffold": ("algorithm.global_lr", (0.5, 1.0, 2.0)),
    "feddyn": ("algorithm.alpha", (0.001, 0.01, 0.1)),
    "moon": ("algorithm.mu", (0.1, 1.0, 5.0)),
    "fedadam": ("algorithm.server_lr", (0.001, 0.01, 0.1)),
    "fedyogi": ("algorithm.server_lr", (0.001, 0.01, 0.1)),
    "fedavgm": ("algorithm.server_lr", (0.1, 0.3, 1.0)),
}
GRID_KEY = "algorithm,lr"  # one zipped axis: a method's values never cross another's


def grid_values(
    algorithms: tuple[str, ...], fixed: Mapping[str, Mapping[str, Any]] | None = None
) -> list[list[Any]]:
    """The zipped `algorithm,lr` values of the methods' grids, [algorithm block, lr] each;
    `fixed`: a method's other parameters (name -> params), kept in every value."""
    out: list[list[Any]] = []
    for name in algorithms:
        field, values = TUNING_GRIDS[name]
        block: dict[str, Any] = {"name": name, **(fixed or {}).get(name, {})}
        for v in values:
            if field == "lr":
                out.append([dict(block), v])
            else:
                out.append([{**block, field.removeprefix("algorithm."): v}, DEFAULT_LR])
    return out


def tuned_fields(algorithms: tuple[str, ...]) -> tuple[str, ...]:
    """The dotted fields the methods tune, each once, in the methods' order."""
    return tuple(dict.fromkeys(TUNING_GRIDS[a][0] for a in algorithms))
