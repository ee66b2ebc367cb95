"""Parameter counts and the estimated size of a run's full checkpoint, no torch.

The API refuses a spec whose full checkpoint would not fit (FEDGEN_MAX_CHECKPOINT_BYTES)
before any worker loads data, so everything here is arithmetic on the spec: the shapes
of each model's declaration (`fedgen.models.builtin`: its state dict counted tensor by
tensor) and `fedgen.models.generator` written out layer by layer (a test
checks every count against the real modules' `numel`), and what
`fedgen.runner.Simulation.full_state` holds:

* the global model's state dict (parameters and BatchNorm buffers);
* per user ever sampled (`Federation.user_local`, made on a user's first training): the
  tensors that stay on the user: BatchNorm buffers when they are kept local, the feature
  extractor under `share: predictor`, the whole model for personalised algorithms (FedDistill);
* per user: the batch stream (a permutation of its training samples, int64, and its RNG);
* FedGen: the generator, its Adam moments (two per parameter, plus a step), its noise
  RNG and the label counts of the users ever sampled (`client_state.PerUserRows`);
  FedDistill: the per-user label-logit trackers; FedDF: its RNG; the state the non-IID
  baselines keep across rounds (`fedgen.algorithms.client_state`): SCAFFOLD's control
  variates and FedDyn's gradient states (one per parameter, per user and at the server),
  MOON's previous local models (the whole state, per user), counted for the users ever
  sampled (`users_ever_sampled`: made on a user's first round; the runner's draws replayed,
  `fedgen.sampling`), the server optimisers' moments (per shared parameter: two for FedAdam
  and FedYogi, one for FedAvgM);
* the history (one float per round), the spec and small fields.

`torch.save` adds a zip entry and a pickled record per tensor (`TENSOR_OVERHEAD`); the
estimate errs above the real size (tests: within 10% above).

What a whole run stores in the lab (the checkpoints kept, every round's rows: its footprint)
is the lab's arithmetic on these figures: `vocab/footprint.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fedgen.algorithms.decl import AlgorithmDecl
from fedgen.algorithms.params import FedGenParams
from fedgen.algorithms.registry import get_algorithm
from fedgen.data.fedprox import TRAIN_SHARE, user_sizes
from fedgen.data.partition import synthetic_class_counts
from fedgen.data.registry import BUILTINS, get_dataset
from fedgen.fidelity import resolve
from fedgen.generator_presets import preset_dims
from fedgen.models.registry import get_model
from fedgen.sampling import users_ever_sampled as sampled_users
from fedgen.spec import ExperimentSpec

FLOAT = 4  # float32
INT64 = 8

# torch.save, measured: about 260-320 bytes of zip entry, 64-byte alignment and pickle
# record per tensor, 130 per NumPy RNG state, 1.3 KiB of archive plus the spec's JSON.
TENSOR_OVERHEAD = 320
STREAM_OVERHEAD = 40  # beside its permutation tensor: the RNG state and the cursor
TORCH_CPU_RNG_STATE = 5056  # torch.Generator("cpu").get_state(): uint8 tensor
TORCH_CUDA_RNG_STATE = 16
FIXED_OVERHEAD = 4096

# (channels, side, classes) of each built-in dataset's images, from its declaration
# (fedgen.data.registry); synthetic and folder take theirs from the spec (`input_shape`).
INPUT_SHAPES: dict[str, tuple[int, int, int]] = {
    d.name: (d.shape[0], d.shape[1], d.classes) for d in BUILTINS if d.shape_for is None
}
# CelebA (natural groups of celebrities) is bounded per user.
CELEBA_TRAIN_SAMPLES = 162_770
CELEBA_IMAGES_PER_CELEB = 35  # at most, in the official split's subset (about 30 on average)


@dataclass
class Tensors:
    """A list of tensors as (number of tensors, bytes of data) by part."""

    count: int = 0
    nbytes: int = 0

    def add(self, numel: int, itemsize: int = FLOAT) -> None:
        self.count += 1
        self.nbytes += numel * itemsize

    def extend(self, other: Tensors, times: int = 1) -> None:
        self.count += other.count * times
        self.nbytes += other.nbytes * times

    @property
    def serialized(self) -> int:
        return self.nbytes + self.count * TENSOR_OVERHEAD


@dataclass
class ModelShape:
    """A classifier's state dict, split the way `Federation` splits it."""

    features: Tensors = field(default_factory=Tensors)  # parameters of the feature extractor
    predictor: Tensors = field(default_factory=Tensors)
    buffers: Tensors = field(default_factory=Tensors)  # BatchNorm running statistics

    @property
    def num_params(self) -> int:
        return (self.features.nbytes + self.predictor.nbytes) // FLOAT

    @property
    def state(self) -> Tensors:
        out = Tensors()
        for part in (self.features, self.predictor, self.buffers):
            out.extend(part)
        return out


def _linear(t: Tensors, fin: int, fout: int) -> None:
    t.add(fout * fin)
    t.add(fout)


def model_shape(
    name: str,
    in_channels: int,
    image_size: int,
    num_classes: int,
    norm: str | None = None,
    image_width: int | None = None,
    projection_dim: int = 0,
) -> ModelShape:
    """The state dict of the registered model `name` (its declaration's `state`), by part.

    `projection_dim` > 0: with the projection head `fedgen.models.cnn.add_projection_head`
    gives it (counted with the feature extractor, as `Federation` splits it: not the
    predictor), and the predictor reading `projection_dim` instead of the latent."""
    decl = get_model(name)
    shape = (in_channels, image_size, image_width if image_width is not None else image_size)
    counts = decl.state(shape, num_classes, norm if norm is not None else decl.default_norm())
    m = ModelShape()
    for n in counts.features:
        m.features.add(n)
    for n, itemsize in counts.buffers:
        m.buffers.add(n, itemsize)
    if projection_dim > 0:
        latent = decl.latent(shape)
        _linear(m.features, latent, latent)
        _linear(m.features, latent, projection_dim)
        _linear(m.predictor, projection_dim, num_classes)
        return m
    for n in counts.predictor:
        m.predictor.add(n)
    return m


def spec_model_shape(spec: ExperimentSpec) -> ModelShape:
    """`model_shape` of the spec's model on its dataset's inputs (with the algorithm's
    projection head: MOON's `projection_dim`)."""
    decl = get_dataset(spec.data.name)
    c, h, w = decl.input_shape(spec.data)
    return model_shape(
        spec.model.name,
        c,
        h,
        decl.num_classes(spec.data),
        spec.model.resolved_norm,
        w,
        spec.algorithm.projection_head_dim,
    )


def latent_dim(name: str, shape: tuple[int, int, int] = (1, 28, 28)) -> int:
    """The predictor's input size (what FedGen's generator produces), from the declaration."""
    return get_model(name).latent(shape)


def generator_params(
    noise_dim: int,
    hidden_dim: int,
    latent: int,
    num_classes: int,
    *,
    embedding: bool = False,
    batchnorm: bool = True,
) -> Tensors:
    """The parameters (not buffers) of `fedgen.models.generator.Generator`."""
    t = Tensors()
    label_dim = noise_dim if embedding else num_classes
    if embedding:
        t.add(num_classes * noise_dim)
    _linear(t, noise_dim + label_dim, hidden_dim)
    if batchnorm:
        t.add(hidden_dim)
        t.add(hidden_dim)
    _linear(t, hidden_dim, latent)
    return t


def generator_buffers(hidden_dim: int, *, batchnorm: bool = True) -> Tensors:
    t = Tensors()
    if batchnorm:
        t.add(hidden_dim)
        t.add(hidden_dim)
        t.add(1, INT64)
    return t


def input_shape(spec: ExperimentSpec) -> tuple[int, int, int]:
    """(channels, side, classes) of the spec's dataset (its declaration's, for this spec)."""
    decl = get_dataset(spec.data.name)
    c, side, _ = decl.input_shape(spec.data)
    return c, side, decl.num_classes(spec.data)


def train_samples_bound(spec: ExperimentSpec) -> int:
    """At most how many training samples the users hold together.

    The Dirichlet splits keep int(min(sampling_ratio x n_train / num_users,
    sampling_ratio x n_class)) samples of each class (`fedgen.data.partition`).
    """
    d, p = spec.data, spec.partition
    if d.name == "synthetic-fedprox":  # its users' sizes follow from data_seed (no Dirichlet)
        sizes = user_sizes(np.random.default_rng(p.data_seed), p.num_users)
        return sum(int(TRAIN_SHARE * int(n)) for n in sizes)
    if d.name == "celeba":
        return min(CELEBA_TRAIN_SAMPLES, p.num_users * p.celebs_per_user * CELEBA_IMAGES_PER_CELEB)
    if d.name == "synthetic":
        counts = synthetic_class_counts(d.synthetic_samples, d.synthetic_classes)
    else:
        known = get_dataset(d.name).train_class_counts
        # A dataset whose size is not declared (folder, a plugin's) is not read here: its
        # streams' permutations (8 bytes a sample, 0.8 MB for 100k) are left out.
        if known is None:
            return 0
        counts = known
    ratio = p.sampling_ratio
    if ratio >= 1:
        return sum(counts)
    per_user = ratio * sum(counts) / p.num_users
    return sum(math.ceil(min(per_user, ratio * n)) for n in counts)


@dataclass(frozen=True)
class CheckpointEstimate:
    """Estimated serialized bytes of a full checkpoint, by part."""

    global_model: int
    per_user: int  # all users together: local model state, batch streams, trackers
    algorithm: int  # generator, optimiser, RNGs
    other: int  # history, spec, archive

    @property
    def total(self) -> int:
        return self.global_model + self.per_user + self.algorithm + self.other

    def driving_field(self) -> str | None:
        """The spec field that makes the checkpoint large (None when no part dominates)."""
        parts = {
            "partition.num_users": self.per_user,
            "model.name": self.global_model,
            "algorithm": self.algorithm,
        }
        name, size = max(parts.items(), key=lambda kv: kv[1])
        return name if size * 2 > self.total else None


def checkpoint_estimate(spec: ExperimentSpec) -> CheckpointEstimate:
    """What `Simulation.full_state` holds for `spec`, by part (see the module docstring)."""
    fid = resolve(spec)
    _, _, classes = input_shape(spec)
    model = spec_model_shape(spec)
    users = spec.partition.num_users
    algo = spec.algorithm
    decl = get_algorithm(algo.name)  # registered: the spec parsed
    sampled = users_ever_sampled(spec)

    local = Tensors()
    if decl.personal_model:  # every user keeps its whole model
        local.extend(model.state)
    else:
        if spec.share == "predictor":
            local.extend(model.features)
        if not (fid.bn_buffers == "average" and spec.share == "all"):
            local.extend(model.buffers)
    per_user = Tensors()
    per_user.extend(local, sampled)  # made on a user's first training (Federation.user_local)
    per_user.add(train_samples_bound(spec), INT64)  # the streams' permutations ...
    per_user.count += users - 1  # ... one tensor each
    per_user_bytes = per_user.serialized + users * STREAM_OVERHEAD
    torch_rng = TORCH_CUDA_RNG_STATE if spec.device.startswith("cuda") else TORCH_CPU_RNG_STATE

    extra = Tensors()
    if decl.label_logits:
        per_user_bytes += users * (classes * classes + classes) * FLOAT + 2 * TENSOR_OVERHEAD
        extra.add(classes * classes)  # global label logits
    elif decl.server_rng:
        extra.add(torch_rng, 1)
    elif (shapes := generator_shapes(spec)) is not None:
        gen, buffers = shapes
        extra.extend(gen)
        extra.extend(buffers)
        if fid.generator_optimizer == "adam":
            extra.extend(gen, 2)  # exp_avg, exp_avg_sq
            extra.count += gen.count  # step (a 0-d tensor per parameter)
            extra.nbytes += gen.count * FLOAT
        extra.add(torch_rng, 1)
        # user_counts: a row per user ever sampled and their ids (client_state.PerUserRows)
        extra.add(sampled * classes)
        extra.add(sampled, INT64)
    kept_per_user, kept_server = state_across_rounds(decl, model, spec.share)
    # Made on a user's first round (client_state.PerUser): the users ever sampled.
    per_user_bytes += kept_per_user.serialized * sampled
    extra.extend(kept_server)
    other = FIXED_OVERHEAD + len(spec.canonical_json()) + 16 * (spec.rounds + 1) + 8 * users
    return CheckpointEstimate(
        global_model=model.state.serialized,
        per_user=per_user_bytes,
        algorithm=extra.serialized,
        other=other,
    )


def users_ever_sampled(spec: ExperimentSpec) -> int:
    """How many users have trained by the last round, exactly (the runner's draws replayed:
    `fedgen.sampling`): the per-user state kept across rounds exists for them alone
    (`fedgen.algorithms.client_state`). The bound min(num_users, rounds x users_per_round)
    counted users drawn twice once each time: 25% above the real checkpoint for SCAFFOLD with
    3 users, 2 a round, after one round; 15% with 10,000 users, 100 a round, 200 rounds."""
    p = spec.partition
    return sampled_users(spec.seed, p.num_users, spec.users_per_round, spec.rounds)


def generator_shapes(spec: ExperimentSpec) -> tuple[Tensors, Tensors] | None:
    """(parameters, buffers) of the spec's FedGen generator; None for other algorithms."""
    algo = spec.algorithm
    if not isinstance(algo, FedGenParams):
        return None
    hidden, noise = preset_dims(spec.data.name, algo.preset, spec.model.name)
    hidden = algo.hidden_dim if algo.hidden_dim is not None else hidden
    noise = algo.noise_dim if algo.noise_dim is not None else noise
    bn = resolve(spec).generator_batchnorm
    _, _, classes = input_shape(spec)
    shape = get_dataset(spec.data.name).input_shape(spec.data)
    params = generator_params(
        noise,
        hidden,
        latent_dim(spec.model.name, shape),
        classes,
        embedding=algo.embedding,
        batchnorm=bn,
    )
    return params, generator_buffers(hidden, batchnorm=bn)


def state_across_rounds(
    decl: AlgorithmDecl, model: ModelShape, share: str
) -> tuple[Tensors, Tensors]:
    """(one user's, the server's) tensors an algorithm keeps from round to round beyond the
    model and the batch streams, as its declaration says (`kept_per_user`, `kept_on_server`):
    what the non-IID baselines (SCAFFOLD … FedAvgM) add to a full checkpoint."""
    params = Tensors()
    params.extend(model.features)
    params.extend(model.predictor)
    parts = {
        "params": params,
        "model": model.state,
        "shared": params if share == "all" else model.predictor,
    }
    user, server = Tensors(), Tensors()
    if decl.kept_per_user is not None:
        user.extend(parts[decl.kept_per_user])
    if decl.kept_on_server is not None:
        what, copies = decl.kept_on_server
        server.extend(parts[what], copies)
    return user, server


def estimate_checkpoint_bytes(spec: ExperimentSpec) -> int:
    """Estimated size in bytes of `spec`'s full checkpoint (slightly above the real one)."""
    return checkpoint_estimate(spec).total


#: Above this many users a round stores its trained users' rows only (fedgen.runner).
FULL_USER_ROWS = 1000
