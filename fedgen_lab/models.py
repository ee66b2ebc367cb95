"""A run's trained networks rebuilt from its checkpoint files: the global model from the run's
`model` checkpoint (the final round's weights) and FedGen's generator from a `generator` one.
torch is imported here only, when a model is asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fedgen import checkpoint
from fedgen.data.registry import get_dataset
from fedgen.spec import ExperimentSpec, parse_spec

if TYPE_CHECKING:
    import torch

    from fedgen.models.cnn import SplitModel
    from fedgen.models.generator import Generator


def model_config_of(spec: ExperimentSpec) -> Any:
    """The `ModelConfig` the run built its model with (its dataset's input shape and classes,
    and the algorithm's projection head: MOON's `projection_dim`)."""
    from fedgen.models.decl import ModelConfig

    decl = get_dataset(spec.data.name)
    c, h, w = decl.input_shape(spec.data)
    return ModelConfig(
        spec.model.name,
        c,
        h,
        decl.num_classes(spec.data),
        spec.model.resolved_norm,
        w,
        spec.algorithm.projection_head_dim,
    )


def model_from_checkpoint(
    data: bytes, spec: dict[str, Any] | None = None, device: str | torch.device = "cpu"
) -> SplitModel:
    """The global model of a `model` checkpoint's bytes, weights loaded, in eval mode.

    The checkpoint carries its spec (`spec_json`); `spec` is used when it does not."""
    import json

    from fedgen.models.cnn import build_model

    state = checkpoint.from_bytes(data, map_location=device)
    if "model" not in state:
        raise checkpoint.CheckpointError("not a model checkpoint (no 'model' weights)")
    raw = json.loads(state["spec_json"]) if "spec_json" in state else spec
    if raw is None:
        raise checkpoint.CheckpointError("the checkpoint names no spec; pass the run's spec")
    parsed = parse_spec(raw)
    model = build_model(model_config_of(parsed), parsed.seed).to(device)
    model.load_state_dict(state["model"])
    return model.eval()


def generator_from_checkpoint(data: bytes, device: str | torch.device = "cpu") -> Generator:
    """FedGen's generator of a `generator` checkpoint's bytes, in eval mode."""
    from fedgen.models.generator import load_generator_checkpoint

    return load_generator_checkpoint(data, device)
