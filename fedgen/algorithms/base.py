"""The algorithm interface: what a client does in a round, what the server does with uploads.

An algorithm owns the global model and any server state (a generator, logit
tables); the runner owns the round loop, user sampling, timing and checkpoints.
`Algorithm` has abstract methods only; `FedAvg` implements them all and the other
algorithms extend it (FedProx adds a gradient term, FedGen a loss term and a
server step, ...).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import torch

from fedgen.evaluation import Evaluation
from fedgen.events import Checkpoint
from fedgen.federated import FederatedData, UserData
from fedgen.fidelity import Fidelity
from fedgen.models.cnn import ModelConfig
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


class Algorithm(ABC):
    """One federated algorithm. Subclasses register in `fedgen.algorithms.ALGORITHMS`."""

    @abstractmethod
    def broadcast_nbytes(self, user: UserData) -> int:
        """Bytes the server sends to `user` this round."""

    @abstractmethod
    def client_update(self, user: UserData, server_round: int, lr: float) -> ClientUpload:
        """Run `user`'s local training for round `server_round` (1-based) and return its upload."""

    @abstractmethod
    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:
        """Aggregate the uploads (and train server-side parts); return algorithm metrics."""

    @abstractmethod
    def evaluate(self) -> Evaluation:
        """Evaluate the current model(s) on every user's split and the global protocol."""

    @abstractmethod
    def global_state(self) -> dict[str, torch.Tensor]:
        """The global model's state dict (the 'model' checkpoint)."""

    @abstractmethod
    def checkpoints(self, server_round: int) -> list[Checkpoint]:
        """Algorithm-specific small checkpoints for this round (e.g. the generator)."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: models, optimizers, per-user state (weights_only-safe)."""

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from `state_dict()`."""
