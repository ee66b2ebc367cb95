"""Server optimisers on the round's pseudo-gradient: FedAdam, FedYogi and FedAvgM.

Papers: Reddi, Charles, Zaheer, Garrett, Rush, Konečný, Kumar, McMahan 2021, "Adaptive
Federated Optimization", ICLR, arXiv.org/abs/2003.00295, Algorithm 2 (FedAdagrad, FedYogi,
FedAdam); Hsu, Qi, Brown 2019, "Measuring the Effects of Non-Identical Data Distribution
for Federated Visual Classification", arXiv.org/abs/1909.06335, §3 (FedAvgM).

With x the global model and Δ_t = Σ_i p_i (y_i − x) the averaged update (the negative
pseudo-gradient; p_i per `fidelity.aggregation`), Algorithm 2 of Reddi et al. steps:

* m_t = β₁ m_{t−1} + (1 − β₁) Δ_t;
* FedAdam: v_t = β₂ v_{t−1} + (1 − β₂) Δ_t²;
  FedYogi: v_t = v_{t−1} − (1 − β₂) Δ_t² sign(v_{t−1} − Δ_t²);
* x_{t+1} = x_t + η m_t / (√v_t + τ), with m_{−1} = 0, v_{−1} = τ² (the paper asks
  v_{−1} ≥ τ²) and no bias correction, as in the paper.

FedAvgM (Hsu et al. §3, with the pseudo-gradient g_t = −Δ_t): v ← β v + g_t,
x_{t+1} = x_t − η_s v; β = 0, η_s = 1 is FedAvg.

Only the shared parameters move this way (all, or the predictor under `share: predictor`);
shared BatchNorm statistics are averaged as in FedAvg. The moments are part of the full
checkpoint.
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch

from fedgen.algorithms import client_state as cs
from fedgen.algorithms.base import Algorithm
from fedgen.algorithms.context import ClientUpload, RunContext
from fedgen.algorithms.params import AlgorithmParams, FedAdamParams, FedAvgMParams, FedYogiParams

P = TypeVar("P", bound=AlgorithmParams)
AdaptiveP = TypeVar("AdaptiveP", bound=FedAdamParams | FedYogiParams)


class ServerOptimizer(Algorithm[P]):
    """FedAvg's clients; the server applies `step` to each shared parameter's Δ_t."""

    # The moments the server keeps per shared parameter (checkpoint keys).
    moments: tuple[str, ...] = ()

    def __init__(self, ctx: RunContext, params: P) -> None:
        super().__init__(ctx, params)
        zeros = cs.zeros_for(self.fed, list(self.fed.shared_keys))
        self.server_state: dict[str, cs.Tensors] = {m: cs.cloned(zeros) for m in self.moments}
        self.init_state()

    def init_state(self) -> None:
        """Set the moments' starting values (zeros unless an optimiser says otherwise)."""

    def step(self, key: str, x: torch.Tensor, delta: torch.Tensor) -> None:
        """Move the parameter `x` (in place) given its averaged update `delta`."""
        raise NotImplementedError

    def server_update(self, uploads: list[ClientUpload], server_round: int) -> dict[str, float]:  # noqa: ARG002
        state = self.fed.global_model.state_dict()
        keys = list(self.fed.shared_keys)
        before = {k: state[k].detach().clone() for k in keys}
        self.fed.aggregate(uploads)  # state now holds the average (and shared BN statistics)
        with torch.no_grad():
            norms = []
            for k in keys:
                delta = state[k] - before[k]
                norms.append(delta.pow(2).sum())
                state[k].copy_(before[k])
                self.step(k, state[k], delta)
            norm = torch.stack(norms).sum().sqrt()
        return {"pseudo_grad_norm": float(norm)}

    def state_dict(self) -> dict[str, Any]:
        saved = {f"server_{m}": cs.cloned(t) for m, t in self.server_state.items()}
        return {**self.fed.state_dict(), **saved}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.fed.load_state_dict(state)
        for m, t in self.server_state.items():
            cs.restore_into(t, state[f"server_{m}"])


class _Adaptive(ServerOptimizer[AdaptiveP]):
    """FedAdam and FedYogi: first moment, a second moment (`second`), the adaptive step."""

    moments = ("m", "v")

    def init_state(self) -> None:
        for v in self.server_state["v"].values():
            v.fill_(self.params.tau**2)

    def second(self, v: torch.Tensor, d2: torch.Tensor) -> None:
        """Update the second moment `v` in place from Δ_t² (`d2`)."""
        raise NotImplementedError

    def step(self, key: str, x: torch.Tensor, delta: torch.Tensor) -> None:
        p = self.params
        m, v = self.server_state["m"][key], self.server_state["v"][key]
        m.mul_(p.beta1).add_(delta, alpha=1.0 - p.beta1)
        self.second(v, delta * delta)
        x.add_(p.server_lr * m / (v.sqrt() + p.tau))


class FedAdam(_Adaptive[FedAdamParams]):
    """Adam at the server (Reddi et al. 2021, Algorithm 2, FedAdam)."""

    def second(self, v: torch.Tensor, d2: torch.Tensor) -> None:
        v.mul_(self.params.beta2).add_(d2, alpha=1.0 - self.params.beta2)


class FedYogi(_Adaptive[FedYogiParams]):
    """Yogi at the server (Reddi et al. 2021, Algorithm 2, FedYogi)."""

    def second(self, v: torch.Tensor, d2: torch.Tensor) -> None:
        v.sub_((1.0 - self.params.beta2) * d2 * torch.sign(v - d2))


class FedAvgM(ServerOptimizer[FedAvgMParams]):
    """Server momentum (Hsu et al. 2019): `server_momentum` β, `server_lr` η_s."""

    moments = ("velocity",)

    def step(self, key: str, x: torch.Tensor, delta: torch.Tensor) -> None:
        v = self.server_state["velocity"][key]
        v.mul_(self.params.server_momentum).sub_(delta)  # v ← β v + g, g = −Δ
        x.sub_(v, alpha=self.params.server_lr)
