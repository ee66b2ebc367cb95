"""Parameter counts, the estimated size of a run's full checkpoint and its footprint, no torch.

The API refuses a spec whose full checkpoint would not fit (FEDGEN_MAX_CHECKPOINT_BYTES)
before any worker loads data, so everything here is arithmetic on the spec: the shapes
of `fedgen.models.cnn` and `fedgen.models.generator` written out layer by layer (a test
checks every count against the real modules' `numel`), and what
`fedgen.runner.Simulation.full_state` holds:

* the global model's state dict (parameters and BatchNorm buffers);
* per user (`Federation.user_local`): the tensors that stay on the user: BatchNorm
  buffers when they are kept local, the feature extractor under `share: predictor`,
  the whole model for personalised algorithms (FedDistill);
* per user: the batch stream (a permutation of its training samples, int64, and its RNG);
* FedGen: the generator, its Adam moments (two per parameter, plus a step), its noise
  RNG and the per-user label counts; FedDistill: the per-user label-logit trackers;
  FedDF: its RNG; the state the non-IID baselines keep across rounds
  (`fedgen.algorithms.client_state`): SCAFFOLD's control variates and FedDyn's gradient
  states (one per parameter, per user and at the server), MOON's previous local models
  (the whole state, per user), the server optimisers' moments (per shared parameter:
  two for FedAdam and FedYogi, one for FedAvgM);
* the history (one float per round), the spec and small fields.

`torch.save` adds a zip entry and a pickled record per tensor (`TENSOR_OVERHEAD`); the
estimate errs above the real size (tests: within 10% above).

A run's whole footprint (`footprint_estimate`, what FEDGEN_QUOTA_BYTES is checked against at
submission) adds the full checkpoints kept, the generator checkpoints kept under the retention
rule (`kept_checkpoint_rounds`), the final model and every round's rows (`round_bytes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fedgen.algorithms.registry import AlgorithmDecl, get_algorithm
from fedgen.data.registry import BUILTINS, get_dataset
from fedgen.generator_presets import PRESETS, dataset_family
from fedgen.spec import ExperimentSpec, FedGenParams

FLOAT = 4  # float32
INT64 = 8

# torch.save, measured: about 260-320 bytes of zip entry, 64-byte alignment and pickle
# record per tensor, 130 per NumPy RNG state, 1.3 KiB of archive plus the spec's JSON.
TENSOR_OVERHEAD = 320
STREAM_OVERHEAD = 160
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


def _conv(t: Tensors, cin: int, cout: int, k: int) -> None:
    t.add(cout * cin * k * k)
    t.add(cout)


def _linear(t: Tensors, fin: int, fout: int) -> None:
    t.add(fout * fin)
    t.add(fout)


def _bn(m: ModelShape, n: int) -> None:
    m.features.add(n)  # weight
    m.features.add(n)  # bias
    m.buffers.add(n)  # running_mean
    m.buffers.add(n)  # running_var
    m.buffers.add(1, INT64)  # num_batches_tracked


def model_shape(name: str, in_channels: int, image_size: int, num_classes: int) -> ModelShape:
    """The state dict of `fedgen.models.cnn.BUILDERS[name]`, by part."""
    m = ModelShape()
    if name == "official-cnn":
        if image_size == 84:  # CelebA: three Conv+BN+ReLU+MaxPool blocks
            cin = in_channels
            for cout in (16, 32, 64):
                _conv(m.features, cin, cout, 3)
                _bn(m, cout)
                cin = cout
            _linear(m.features, 64, 32)
        else:
            side = (image_size + 3) // 4
            _conv(m.features, in_channels, 6, 3)
            _bn(m, 6)
            _conv(m.features, 6, 16, 3)
            _bn(m, 16)
            _linear(m.features, 16 * side * side, 32)
        _linear(m.predictor, 32, num_classes)
    elif name == "mcmahan-cnn":
        side = image_size // 4
        _conv(m.features, in_channels, 32, 5)
        _conv(m.features, 32, 64, 5)
        _linear(m.features, 64 * side * side, 512)
        _linear(m.predictor, 512, num_classes)
    else:
        raise KeyError(f"unknown model {name!r}")
    return m


def latent_dim(name: str) -> int:
    """The predictor's input size (what FedGen's generator produces)."""
    return 512 if name == "mcmahan-cnn" else 32


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
    from fedgen.data.partition import synthetic_class_counts

    d, p = spec.data, spec.partition
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
    from fedgen.fidelity import resolve

    fid = resolve(spec)
    channels, side, classes = input_shape(spec)
    model = model_shape(spec.model.name, channels, side, classes)
    users = spec.partition.num_users
    algo = spec.algorithm
    decl = get_algorithm(algo.name)  # registered: the spec parsed

    local = Tensors()
    if decl.personal_model:  # every user keeps its whole model
        local.extend(model.state)
    else:
        if spec.share == "predictor":
            local.extend(model.features)
        if not (fid.bn_buffers == "average" and spec.share == "all"):
            local.extend(model.buffers)
    per_user = Tensors()
    per_user.extend(local, users)
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
        extra.add(users * classes)  # user_counts
    kept_per_user, kept_server = state_across_rounds(decl, model, spec.share)
    per_user_bytes += kept_per_user.serialized * users
    extra.extend(kept_server)
    other = FIXED_OVERHEAD + len(spec.canonical_json()) + 16 * (spec.rounds + 1) + 8 * users
    return CheckpointEstimate(
        global_model=model.state.serialized,
        per_user=per_user_bytes,
        algorithm=extra.serialized,
        other=other,
    )


def generator_shapes(spec: ExperimentSpec) -> tuple[Tensors, Tensors] | None:
    """(parameters, buffers) of the spec's FedGen generator; None for other algorithms."""
    from fedgen.fidelity import resolve

    algo = spec.algorithm
    if not isinstance(algo, FedGenParams):
        return None
    hidden, noise = PRESETS[dataset_family(spec.data.name)][algo.preset]
    hidden = algo.hidden_dim if algo.hidden_dim is not None else hidden
    noise = algo.noise_dim if algo.noise_dim is not None else noise
    bn = resolve(spec).generator_batchnorm
    _, _, classes = input_shape(spec)
    params = generator_params(
        noise, hidden, latent_dim(spec.model.name), classes, embedding=algo.embedding, batchnorm=bn
    )
    return params, generator_buffers(hidden, batchnorm=bn)


def state_across_rounds(
    decl: AlgorithmDecl, model: ModelShape, share: str
) -> tuple[Tensors, Tensors]:
    """(one user's, the server's) tensors an algorithm keeps from round to round beyond the
    model and the batch streams, as its declaration says (`kept_per_user`, `kept_on_server`):
    what the baselines of issue 32 add to a full checkpoint."""
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


# What a stored round costs outside its checkpoints (its packed round_metrics row and its one
# round_users row, indexes included: lab/round_pack.py), rounded up from what
# bench/storage_per_round.py measured on PostgreSQL (growth between a 10-round and a longer run)
# for real FedGen runs on Fashion-MNIST, half the users a round: 647 and 733 bytes a round with
# 20 users (two sittings: pages and index splits fall differently), 1,170 with 50, so ~17.4 a
# user over 300-400. (Before migration 0010, a JSON object a round and a row per user: 3,474
# bytes with 20 users, 474 + 150 a user.) The footprint estimate and each run's `stored_bytes`
# both count rounds with these, erring above.
ROUND_BYTES_BASE = 400
ROUND_BYTES_PER_USER = 18

# A generator or final-model checkpoint: torch.save's archive around the tensors, the
# generator's config or the spec's JSON, and the round.
SMALL_CHECKPOINT_OVERHEAD = 2048


def round_bytes(num_users: int) -> int:
    """Bytes one stored round of a run with `num_users` users takes, checkpoints left out."""
    return ROUND_BYTES_BASE + ROUND_BYTES_PER_USER * max(num_users, 0)


@dataclass(frozen=True)
class KeepRule:
    """Which of a run's generator checkpoints are kept (FEDGEN_KEEP_GENERATOR_CHECKPOINTS).

    `every`: those at rounds that are multiples of it; `last`: the newest this many; the final
    round's is always kept. Neither set: all are kept (what the lab did before retention).
    """

    every: int | None = None
    last: int | None = None

    @property
    def keeps_all(self) -> bool:
        return self.every is None and self.last is None


KEEP_ALL = KeepRule()
MAX_KEEP = 10_000  # every:N and last:K are at most this (a run has at most 10,000 rounds)


def parse_keep_rule(text: str) -> KeepRule:
    """'every:10,last:3', 'last:5', 'every:25' or 'all' -> KeepRule; a ValueError names the
    part that is wrong and what is allowed."""
    text = text.strip()
    if text == "all":
        return KEEP_ALL
    found: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        key, sep, value = part.partition(":")
        if not sep or key not in ("every", "last") or key in found:
            raise ValueError(
                f"{part!r}: expected 'all' or 'every:N' and/or 'last:K', comma-separated, each once"
            )
        try:
            n = int(value)
        except ValueError:
            raise ValueError(f"{part!r}: {value!r} is not a whole number") from None
        low = 1 if key == "every" else 0
        if not low <= n <= MAX_KEEP:
            raise ValueError(f"{part!r}: {key} must be between {low} and {MAX_KEEP}")
        found[key] = n
    return KeepRule(every=found.get("every"), last=found.get("last"))


def checkpoint_rounds(rounds: int, every: int) -> list[int]:
    """Rounds at which a run writes its full (and generator) checkpoints: each multiple of
    `checkpoint_every` after round 0, and the last round (`fedgen.runner.checkpoints_for`)."""
    out = list(range(every, rounds, every)) if every > 0 else []
    return [*out, rounds]


def kept_checkpoint_rounds(rounds: int, every: int, rule: KeepRule | str) -> list[int]:
    """The rounds whose generator checkpoints a finished run still has under `rule` (a
    KeepRule or its text): of `checkpoint_rounds(rounds, every)`, the multiples of rule.every,
    the newest rule.last and the final one."""
    rule = parse_keep_rule(rule) if isinstance(rule, str) else rule
    written = checkpoint_rounds(rounds, every)
    if rule.keeps_all:
        return written
    newest = set(written[len(written) - rule.last :]) if rule.last else set()
    step = rule.every
    return [
        r for r in written if r == rounds or r in newest or (step is not None and r % step == 0)
    ]


@dataclass(frozen=True)
class Footprint:
    """Estimated bytes a finished run stores, by part (what its owner's usage grows by)."""

    full: int  # the full (resume) checkpoints kept (FEDGEN_KEEP_FULL_CHECKPOINTS)
    generator: int  # FedGen's generator checkpoints kept under the retention rule
    model: int  # the final model
    rounds: int  # the per-round rows, rounds 0..R

    @property
    def total(self) -> int:
        return self.full + self.generator + self.model + self.rounds


def generator_checkpoint_bytes(spec: ExperimentSpec) -> int:
    """Estimated size of one of the spec's generator checkpoints (0 when it has none)."""
    shapes = generator_shapes(spec)
    if shapes is None:
        return 0
    tensors = Tensors()
    for part in shapes:
        tensors.extend(part)
    return tensors.serialized + SMALL_CHECKPOINT_OVERHEAD


def model_checkpoint_bytes(spec: ExperimentSpec) -> int:
    """Estimated size of the spec's final-model checkpoint (the global model and the spec)."""
    channels, side, classes = input_shape(spec)
    state = model_shape(spec.model.name, channels, side, classes).state
    return state.serialized + len(spec.canonical_json()) + SMALL_CHECKPOINT_OVERHEAD


def footprint_estimate(
    spec: ExperimentSpec, keep_full: int, keep_generator: KeepRule | str = KEEP_ALL
) -> Footprint:
    """What `spec`'s run stores once finished: `keep_full` full checkpoints (at most as many
    as it writes), its generator checkpoints kept under `keep_generator`, the final model, and
    rounds 0..R of per-round rows. No torch: arithmetic on the spec (see the module docstring)."""
    written = checkpoint_rounds(spec.rounds, spec.checkpoint_every)
    generators = len(kept_checkpoint_rounds(spec.rounds, spec.checkpoint_every, keep_generator))
    return Footprint(
        full=min(keep_full, len(written)) * estimate_checkpoint_bytes(spec),
        generator=generators * generator_checkpoint_bytes(spec),
        model=model_checkpoint_bytes(spec),
        rounds=(spec.rounds + 1) * round_bytes(spec.partition.num_users),
    )


def footprint_field(spec: ExperimentSpec, footprint: Footprint) -> str:
    """The spec field that makes the footprint large: `rounds` (per-round rows),
    `checkpoint_every` (generator checkpoints), or what drives the full checkpoint's size."""
    parts = {
        "rounds": footprint.rounds,
        "checkpoint_every": footprint.generator,
        "model.name": footprint.model,
        "full": footprint.full,
    }
    name = max(parts, key=lambda k: parts[k])
    if name == "full":
        return checkpoint_estimate(spec).driving_field() or "(root)"
    return name


def format_bytes(n: int) -> str:
    """1536 -> '1.5 KiB', 1 << 30 -> '1 GiB' (binary units, at most one decimal)."""
    value, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    text = f"{value:.1f}".removesuffix(".0")
    return f"{text} {unit}"
