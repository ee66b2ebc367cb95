"""The algorithm interface, generic in its parameter type.

`Algorithm[P]` is built from the run context and its own parameters
(`self.params: P`, one of the spec's `*Params` classes) and uses a
`Federation` (`fedgen.algorithms.shared`: global model, per-user state, batch
streams, aggregation, evaluation, checkpoint state) as `self.fed`. Its default
methods are plain FedAvg; an algorithm overrides the hooks its method changes:
`local_loss` / `grad_hook` (the client objective), `client_update`,
`server_update`, `evaluate`, `checkpoints`, `state_dict` / `load_state_dict`.
The runner owns the round loop, user sampling, timing and checkpoints.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

import torch

from fedgen.algorithms.context import ClientUpload, RunContext
from fedgen.algorithms.shared import Federation
from fedgen.client import GradHook, LossFn, cross_entropy_loss, local_sgd
from fedgen.evaluation import Evaluation
from fedgen.events import Checkpoint
from fedgen.federated import UserData
from fedgen.spec import AlgorithmParams

P = TypeVar("P", bound=AlgorithmParams)

__all__ = ["Algorithm", "ClientUpload", "RunContext"]


class Algorithm(Generic[P]):
    """One federated algorithm. Each is declared once (`fedgen.algorithms.registry`)."""

    # Personalised models: nothing is shared (see `Federation`).
    personal: ClassVar[bool] = False

    def __init__(self, ctx: RunContext, params: P) -> None:
        self.ctx = ctx
        self.params: P = params
        self.spec = ctx.spec
        self.fid = ctx.fidelity
        self.data = ctx.data
        self.fed = Federation(ctx, personal=self.personal)

    # -- client side ---------------------------------------------------------
    def broadcast_nbytes(self, user: UserData) -> int:  # noqa: ARG002
        """Bytes the server sends to `user` this round."""
        return 0 if self.personal else self.fed.broadcast_nbytes

    def local_loss(self, user: UserData, server_round: int) -> LossFn:  # noqa: ARG002
        """The objective of one local step."""
        return cross_entropy_loss

    def grad_hook(self, user: UserData, server_round: int) -> GradHook | None:  # noqa: ARG002
        """Edits gradients before each step (e.g. FedProx's proximal term)."""
        return None

    def client_update(self, user: UserData, server_round: int, lr: float) -> ClientUpload:
        """Run `user`'s local training for round `server_round` (1-based) and return its upload."""
        model = self.fed.load_user_model(user)
        loss = local_sgd(
            model,
            self.data.train_x,
            self.data.train_y,
            self.fed.batches(user),
            lr,
            self.local_loss(user, server_round),
            self.grad_hook(user, server_round),
        )
        return self.fed.make_upload(user, model, loss)

    # -- server side ---------------------------------------------------------
    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:  # noqa: ARG002
        """Aggregate the uploads (and train server-side parts); return algorithm metrics."""
        self.fed.aggregate(uploads)
        return {}

    def evaluate(self) -> Evaluation:
        """Evaluate the current model(s) on every user's split and the global protocol."""
        return self.fed.evaluate()

    # -- checkpoints ---------------------------------------------------------
    def global_state(self) -> dict[str, torch.Tensor]:
        """The global model's state dict (the 'model' checkpoint)."""
        return self.fed.global_state()

    def checkpoints(self, server_round: int) -> list[Checkpoint]:  # noqa: ARG002
        """Algorithm-specific small checkpoints for this round (e.g. the generator)."""
        return []

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: models, optimizers, per-user state (weights_only-safe)."""
        return self.fed.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from `state_dict()`."""
        self.fed.load_state_dict(state)
