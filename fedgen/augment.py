"""Train-time augmentation of a run's batches (`data.augment`), with its random state.

`Augmenter` applies the spec's augmentation to every training batch a client draws
(`fedgen.client.local_sgd`, `fedgen.batched.batched_sgd`); its generator is seeded from the
run's seed and saved in full checkpoints, so a resumed run draws the same crops and flips.
Which augmentation a dataset defaults to is its declaration's (`DatasetDecl.augment`); the
crop-flip itself is `fedgen.data.cifar.augment_batch`. Under `execution: batched` the stacked
clients' batches are augmented as one tensor, so the draws differ from a sequential run's
(each is the same distribution).
"""

from __future__ import annotations

import torch

from fedgen.data.cifar import augment_batch


class Augmenter:
    """A batch transform with its own CPU generator (the same draws on every device)."""

    def __init__(self, kind: str, seed: int) -> None:
        if kind != "crop-flip":
            raise ValueError(f"unknown augmentation {kind!r}")
        self.kind = kind
        self.generator = torch.Generator().manual_seed(int(seed) * 1_000_003 + 17)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return augment_batch(x, self.generator)

    def state_dict(self) -> dict[str, torch.Tensor | str]:
        return {"kind": self.kind, "generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, torch.Tensor | str]) -> None:
        gen = state["generator"]
        assert isinstance(gen, torch.Tensor)
        self.generator.set_state(gen)


def augmenter_for(kind: str, seed: int) -> Augmenter | None:
    """The run's augmenter, None for 'none'."""
    return None if kind == "none" else Augmenter(kind, seed)
