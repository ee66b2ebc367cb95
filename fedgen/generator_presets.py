"""FedGen generator presets: (hidden_dim, noise_dim) per dataset family, without torch.

Reference §4 GENERATORCONFIGS. The paper's Table 2 ablation (EMNIST) is the `emnist`
row. CelebA has only a default in the official code; its cnn0..cnn3 reuse the
mnist-like variants. Kept apart from `fedgen.models.generator` so that the studies,
the API and the dashboard can name a preset's dimensions without importing torch.
"""

from __future__ import annotations

_MNIST: dict[str, tuple[int, int]] = {
    "default": (256, 32),
    "cnn0": (256, 64),
    "cnn1": (128, 32),
    "cnn2": (64, 32),
    "cnn3": (64, 16),
}

PRESETS: dict[str, dict[str, tuple[int, int]]] = {
    "mnist": _MNIST,
    "emnist": {
        "default": (256, 32),
        "cnn0": (256, 64),
        "cnn1": (128, 32),
        "cnn2": (128, 16),
        "cnn3": (64, 32),
    },
    # The official code gives CelebA only its own default; cnn0..cnn3 are MNIST's.
    "celeba": {**_MNIST, "default": (128, 32)},
}


def dataset_family(dataset: str) -> str:
    """The preset family of a dataset name: 'emnist', 'celeba' or 'mnist' (everything else)."""
    if dataset.startswith("emnist"):
        return "emnist"
    if dataset == "celeba":
        return "celeba"
    return "mnist"
