"""What an algorithm is given (`RunContext`) and what a client sends back (`ClientUpload`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from fedgen.federated import FederatedData
from fedgen.fidelity import Fidelity
from fedgen.models.decl import ModelConfig
from fedgen.spec import ExperimentSpec


@dataclass(frozen=True)
class RunContext:
    """What an algorithm may use: the spec, its resolved fidelity, the data, the device, seeds."""

    spec: ExperimentSpec
    fidelity: Fidelity
    data: FederatedData
    device: torch.device
    model_config: ModelConfig
    seed: int


@dataclass
class ClientUpload:
    """What one selected user sends back at the end of its local training."""

    user: int
    num_samples: int
    params: dict[str, torch.Tensor]  # shared parameters (all, or the predictor's)
    buffers: dict[str, torch.Tensor] = field(default_factory=dict)  # BN stats when averaged
    label_counts: torch.Tensor | None = None
    extras: dict[str, torch.Tensor] = field(default_factory=dict)
    train_loss: torch.Tensor | None = None  # 0-d, read once per round

    def nbytes(self) -> int:
        tensors = [*self.params.values(), *self.buffers.values(), *self.extras.values()]
        if self.label_counts is not None:
            tensors.append(self.label_counts)
        return sum(t.numel() * t.element_size() for t in tensors)
