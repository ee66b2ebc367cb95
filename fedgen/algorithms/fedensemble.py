"""FedEnsemble: FedAvg training, evaluated as the ensemble of all users' models.

Baseline of Zhu, Hong, Zhou 2021 (arxiv.org/abs/2105.10056, Table 1); reference §5.5.
As in the official code, every user receives the global model each round, so at
evaluation time (after aggregation) the selected users hold their freshly trained
models and every other user holds the global model it received at the start of
the round (before any round: the initial model). The prediction is the argmax of
the users' summed logits, run once over the test set and read per user by index.
"""

from __future__ import annotations

import torch
from torch.func import functional_call

from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.context import ClientUpload
from fedgen.algorithms.params import FedEnsembleParams
from fedgen.algorithms.shared import Tensors
from fedgen.evaluation import Evaluation, Logits, evaluate_shared


class FedEnsemble(Algorithm[FedEnsembleParams]):
    """FedAvg whose evaluated predictor is the sum of all users' logits."""

    members: dict[int, Tensors]
    round_start: Tensors | None = None

    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:
        # The model every unselected user holds: the global model as broadcast this round.
        self.round_start = self.fed.global_state()
        self.members = {u.user: self.fed.trained_tensors(u) for u in uploads}
        return super().server_update(uploads, server_round)

    def _member_states(self) -> list[tuple[Tensors, int]]:
        """(state, multiplicity) of every user's current model; identical ones are merged."""
        members = getattr(self, "members", {})
        base = self.round_start if self.round_start is not None else self.fed.global_state()
        out: list[tuple[Tensors, int]] = [(s, 1) for s in members.values()]
        rest = [u.index for u in self.data.users if u.index not in members]
        if not rest:
            return out
        if not self.fed.local_keys:
            return [*out, (base, len(rest))]
        for k in rest:
            state = dict(base)
            state.update(self.fed.user_local.peek(k))
            out.append((state, 1))
        return out

    def evaluate(self) -> Evaluation:
        return evaluate_shared(
            self.validation_logits(), self.data, self.fid.test_protocol, self.spec.eval_batch_size
        )

    def validation_logits(self) -> Logits:
        """The ensemble's summed logits (its global prediction)."""
        states = self._member_states()
        work = self.fed.work
        work.eval()

        def logits(x: torch.Tensor) -> torch.Tensor:
            total = torch.zeros((), device=x.device)
            for state, mult in states:
                out: torch.Tensor = functional_call(work, state, (x,))
                total = total + (out * mult if mult != 1 else out)
            return total

        return logits
