"""The algorithm interface, generic in its parameter type.

`Algorithm[P]` is built from the run context and its own parameters
(`self.params: P`, one of the spec's `*Params` classes) and uses a
`Federation` (`fedgen.algorithms.shared`: global model, per-user state, batch
streams, aggregation, evaluation, checkpoint state) as `self.fed`. Its default
methods are plain FedAvg; an algorithm overrides the hooks its method changes:
`local_loss` / `grad_hook` (the client objective), `client_update`,
`server_update`, `evaluate`, `checkpoints`, `state_dict` / `load_state_dict`.
Under `execution: batched` (an algorithm declared `batchable`) `client_update_batch`
trains several users as one computation (`fedgen.batched`); its hooks are
`batch_plans`, `batched_loss`, `batched_grad_hook` and `upload_batched`.
The runner owns the round loop, user sampling, timing and checkpoints.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

import torch

from fedgen.algorithms.context import ClientUpload, RunContext
from fedgen.algorithms.params import AlgorithmParams
from fedgen.algorithms.registry import get_algorithm
from fedgen.algorithms.shared import Federation
from fedgen.batched import (
    BatchedGradHook,
    BatchedLoss,
    StackedClients,
    batched_sgd,
    cross_entropy_losses,
)
from fedgen.client import GradHook, LossFn, cross_entropy_loss, local_sgd
from fedgen.evaluation import Evaluation, Logits
from fedgen.events import Checkpoint
from fedgen.federated import UserData

P = TypeVar("P", bound=AlgorithmParams)

__all__ = ["Algorithm"]


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
            self.data.augment,
        )
        return self.fed.make_upload(user, model, loss)

    # -- client side, batched (`execution: batched`, declared `batchable`) -----------
    def batch_plans(
        self,
        users: list[UserData],  # noqa: ARG002
        batches: list[torch.Tensor],
        server_round: int,  # noqa: ARG002
    ) -> list[Any]:
        """Per-user inputs of the batched objective, made in user order (FedGen's draws)."""
        return [None] * len(batches)

    def batched_loss(self, plans: list[Any], server_round: int) -> BatchedLoss:  # noqa: ARG002
        """The objective of one batched local step: every client's loss, (K,)."""
        return cross_entropy_losses

    def batched_grad_hook(
        self,
        stack: StackedClients,  # noqa: ARG002
        server_round: int,  # noqa: ARG002
    ) -> BatchedGradHook | None:
        """Edits the stacked gradients before each step (FedProx)."""
        return None

    def client_update_batch(
        self, users: list[UserData], server_round: int, lrs: list[float]
    ) -> list[ClientUpload]:
        """`client_update` of every user in `users` as one computation; uploads in user order.

        Users whose batches differ in shape (fewer samples than a batch) form their own stack.
        """
        batches = [self.fed.batches(u) for u in users]
        plans = self.batch_plans(users, batches, server_round)
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, b in enumerate(batches):
            groups.setdefault(tuple(b.shape), []).append(i)
        uploads: dict[int, ClientUpload] = {}
        device = self.data.train_x.device
        for members in groups.values():
            stack = self.fed.stack([users[i] for i in members])
            losses = batched_sgd(
                stack,
                self.data.train_x,
                self.data.train_y,
                torch.stack([batches[i] for i in members]),
                torch.tensor([lrs[i] for i in members], device=device),
                self.batched_loss([plans[i] for i in members], server_round),
                self.batched_grad_hook(stack, server_round),
                self.data.augment,
            )
            for j, i in enumerate(members):
                uploads[i] = self.upload_batched(users[i], stack.state(j), losses[j], batches[i])
        return [uploads[i] for i in range(len(users))]

    def upload_batched(
        self,
        user: UserData,
        state: dict[str, torch.Tensor],
        loss: torch.Tensor,
        batches: torch.Tensor,  # noqa: ARG002
    ) -> ClientUpload:
        """One user's upload from its trained state in the stack (FedGen adds label counts)."""
        return self.fed.upload_from_state(user, state, loss)

    # -- server side ---------------------------------------------------------
    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:  # noqa: ARG002
        """Aggregate the uploads (and train server-side parts); return algorithm metrics."""
        self.fed.aggregate(uploads)
        return {}

    def evaluate(self) -> Evaluation:
        """Evaluate the current model(s) on every user's split and the global protocol."""
        return self.fed.evaluate()

    def validation_logits(self) -> Logits:
        """The global model's forward pass (eval mode): what `val_acc` measures on the users'
        validation data (`partition.val_fraction`). An algorithm whose global prediction is
        not one model (FedEnsemble) overrides it."""
        model = self.fed.global_model
        model.eval()
        return model

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


def build_algorithm(ctx: RunContext) -> Algorithm[Any]:
    """The algorithm `ctx.spec.algorithm` names, given its parameters.

    The spec's `algorithm` field validates against the registered params classes by
    `name`, and each registered class is generic in exactly its params class.
    """
    params = ctx.spec.algorithm
    algorithm: Algorithm[Any] = get_algorithm(params.name).load_class()(ctx, params)
    return algorithm
