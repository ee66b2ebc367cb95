"""FedGen generator presets: (hidden_dim, noise_dim) per dataset family, without torch.

Reference §4 GENERATORCONFIGS. The paper's Table 2 ablation (EMNIST) is the `emnist`
row. CelebA has only a default in the official code; its cnn0..cnn3 reuse the
mnist-like variants. Kept apart from `fedgen.models.generator` so that the studies,
the API and the dashboard can name a preset's dimensions without importing torch.

The presets are the official code's, sized for the CNNs' 32 latent features (the McMahan
CNN's 512 too, as the official code would run it). A model with a wider latent declares a
`generator_width` (`fedgen.models.registry.ModelDecl`): `preset_dims` multiplies the preset's
hidden width by it and keeps its noise. ResNet-18 (512 features) takes 2: the default preset
becomes [32, 512], the official code's own `cifar` entry (hidden 512), and the cnn0..cnn3
ablation keeps its order (512, 256, 128, 128 for MNIST-like data). Explicit
`algorithm.hidden_dim` / `noise_dim` override either.
"""

from __future__ import annotations

from fedgen.models.registry import get_model

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


def preset_dims(dataset: str, preset: str, model: str = "official-cnn") -> tuple[int, int]:
    """(hidden_dim, noise_dim) of `preset` on `dataset` for `model` (its generator width).

    Raises
    ------
    KeyError
        If `preset` or `model` is unknown.
    """
    table = PRESETS[dataset_family(dataset)]
    if preset not in table:
        raise KeyError(f"unknown generator preset {preset!r}; expected one of {sorted(table)}")
    hidden, noise = table[preset]
    return max(1, round(hidden * get_model(model).generator_width)), noise
