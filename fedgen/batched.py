"""A round's clients as one computation: K copies of a `SplitModel` stacked, trained together.

Under `execution: batched` every selected client's parameters and buffers are stacked on a
leading client axis (K, ...) and one forward/backward per local step serves all K clients,
each on its own batch, with its own learning rate and BatchNorm statistics. Gradients of the
sum of the K clients' losses are each client's own gradients (the clients share no tensor),
so one SGD step on the stacks is K independent SGD steps.

Why grouped convolutions and not `torch.func.vmap` over `functional_call`: on the 2-core
machine (official CNN, 10 clients x 20 steps of batch 32, one process, interleaved) vmap
took 1.2-2.0 s where grouped convolutions took 0.25-1.7 s at 2 threads (a loaded machine),
and 348 vs 332 ms at 1 thread; vmap also needs BatchNorm's running statistics as batched in-place updates. The layout here:
conv activations are (B, K*C, H, W), client k's channels the k-th block of C, so a
convolution with groups=K and a BatchNorm over K*C channels compute each client's layer on
its own batch exactly as its own model would (BatchNorm's batch statistics are per channel).
After `Flatten` activations are (K, B, F) and a linear layer is one `baddbmm`. GroupNorm
stacks as K x G groups (its groups are consecutive channels), residual blocks
(`fedgen.models.resnet.BasicBlock`) as their layers plus the sum, average pools per channel.
Models of other layers are not batched (`unsupported` says why) and run sequentially.

Everything stays on the data's device; a local step reads no value back to the host.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

from fedgen.models.cnn import SplitModel
from fedgen.models.resnet import BasicBlock

Tensors = dict[str, torch.Tensor]
# (stack, x of the step (B*K, C, H, W) sample-major, y (K, B), step) -> per-client losses (K,)
BatchedLoss = Callable[["StackedClients", torch.Tensor, torch.Tensor, int], torch.Tensor]
# Edits the stacked gradients in place before each step (FedProx).
BatchedGradHook = Callable[[list[torch.Tensor]], None]

_ELEMENTWISE = (nn.ReLU,)


def _conv_layer(layer: nn.Module, where: str, flat: bool) -> str | None:
    """Why a layer before Flatten (inside a residual block too) is not stacked, or None."""
    if isinstance(layer, nn.Conv2d):
        if flat or layer.groups != 1 or layer.padding_mode != "zeros":
            return f"{where}: only an ungrouped, zero-padded convolution before Flatten"
    elif isinstance(layer, nn.BatchNorm2d):
        if flat or not (layer.affine and layer.track_running_stats) or layer.momentum is None:
            return f"{where}: only an affine BatchNorm with running statistics and momentum"
    elif isinstance(layer, nn.GroupNorm):
        if flat or not layer.affine:
            return f"{where}: only an affine GroupNorm before Flatten"
    elif isinstance(layer, nn.MaxPool2d):
        if flat or layer.return_indices:
            return f"{where}: only a max-pool before Flatten"
    elif isinstance(layer, nn.AdaptiveAvgPool2d):
        if flat:
            return f"{where}: only an average pool before Flatten"
    elif isinstance(layer, BasicBlock):
        for name, child in layer.named_children():
            if name == "shortcut":
                for j, sub in enumerate(child.children()):
                    why = _conv_layer(sub, f"{where}.shortcut.{j}", flat)
                    if why is not None:
                        return why
                continue
            why = _conv_layer(child, f"{where}.{name}", flat)
            if why is not None:
                return why
    elif not isinstance(layer, _ELEMENTWISE):
        return f"{where}: layer kind not batched"
    return None


def unsupported(model: SplitModel) -> str | None:
    """Why `model` cannot be batched here, or None when it can."""
    if model.projection is not None:  # the stacked forward runs features then predictor
        return "a projection head (MOON's projection_dim) is not batched"
    if not isinstance(model.features, nn.Sequential):
        return "the feature extractor is not an nn.Sequential"
    flat = False
    for i, layer in enumerate(model.features):
        where = f"features.{i} ({type(layer).__name__})"
        if isinstance(layer, nn.Flatten):
            if flat or layer.start_dim != 1 or layer.end_dim != -1:
                return f"{where}: only one Flatten of every dimension after the batch"
            flat = True
        elif isinstance(layer, nn.Linear):
            if not flat:
                return f"{where}: a linear layer only after Flatten"
        elif isinstance(layer, _ELEMENTWISE):
            continue
        else:
            why = _conv_layer(layer, where, flat)
            if why is not None:
                return why
    return None if flat else "the feature extractor has no Flatten"


class StackedClients:
    """K clients' models as stacked tensors (leaf parameters with a leading client axis).

    `users` names the client of each stack entry (user indices, in stack order), so that
    per-user state kept beside the model (SCAFFOLD's c_i, FedDyn's g_k) stacks alike.
    """

    def __init__(self, model: SplitModel, states: list[Tensors], users: list[int]) -> None:
        reason = unsupported(model)
        if reason is not None:
            raise ValueError(f"model cannot be batched: {reason}")
        if len(users) != len(states):
            raise ValueError(f"users: {len(users)} given for {len(states)} stacked states")
        self.model = model
        self.k = len(states)
        self.users = list(users)
        names = [n for n, _ in model.named_parameters()]
        self.params: Tensors = {
            n: torch.stack([s[n].detach() for s in states]).requires_grad_() for n in names
        }
        self.buffers: Tensors = {
            n: torch.stack([s[n].detach() for s in states]) for n, _ in model.named_buffers()
        }
        self.trainable = [self.params[n] for n, p in model.named_parameters() if p.requires_grad]
        # Every BatchNorm, residual blocks' too: their batch counters advance per step.
        self._bn = [
            f"features.{name}."
            for name, layer in model.features.named_modules()
            if isinstance(layer, nn.BatchNorm2d)
        ]

    # -- forward ---------------------------------------------------------------
    def _linear(self, prefix: str, h: torch.Tensor) -> torch.Tensor:
        weight, bias = self.params[prefix + "weight"], self.params.get(prefix + "bias")
        if bias is None:
            return torch.bmm(h, weight.transpose(1, 2))
        return torch.baddbmm(bias.unsqueeze(1), h, weight.transpose(1, 2))

    def extract(self, x: torch.Tensor) -> torch.Tensor:
        """x (B*K, C, H, W), sample-major (row b*K + k is client k's b-th) -> z (K, B, d)."""
        k = self.k
        b = x.shape[0] // k
        # Channels-last: grouped convolutions' kernels are several times faster on it (CPU,
        # oneDNN: 3.4 vs 13.6 ms for the official CNN's second convolution of 10 clients).
        h = x.reshape(b, k * x.shape[1], *x.shape[2:]).contiguous(memory_format=torch.channels_last)
        features = self.model.features
        assert isinstance(features, nn.Sequential)
        for i, layer in enumerate(features):
            pre = f"features.{i}."
            if isinstance(layer, nn.Flatten):
                h = h.reshape(b, k, -1).transpose(0, 1)
            elif isinstance(layer, nn.Linear):
                h = self._linear(pre, h)
            else:
                h = self._spatial(layer, pre, h)
        return h

    def _spatial(self, layer: nn.Module, pre: str, h: torch.Tensor) -> torch.Tensor:
        """One layer before Flatten on (B, K*C, H, W), client k's channels the k-th block."""
        k, p, buf = self.k, self.params, self.buffers
        if isinstance(layer, nn.Conv2d):
            w = p[pre + "weight"]
            bias = p.get(pre + "bias")
            return F.conv2d(
                h,
                w.reshape(-1, *w.shape[2:]),
                None if bias is None else bias.reshape(-1),
                layer.stride,
                layer.padding,
                layer.dilation,
                k,
            )
        if isinstance(layer, nn.BatchNorm2d):
            # The stacked running statistics are contiguous (K, C): their flat views are
            # updated in place, as each client's own BatchNorm would update its own.
            return F.batch_norm(
                h,
                buf[pre + "running_mean"].view(-1),
                buf[pre + "running_var"].view(-1),
                p[pre + "weight"].reshape(-1),
                p[pre + "bias"].reshape(-1),
                True,
                float(layer.momentum or 0.0),
                layer.eps,
            )
        if isinstance(layer, nn.GroupNorm):
            # GroupNorm's groups are consecutive channel blocks: K*G groups over K*C channels
            # are client k's G groups of its own C channels, normalised per sample.
            return F.group_norm(
                h,
                k * layer.num_groups,
                p[pre + "weight"].reshape(-1),
                p[pre + "bias"].reshape(-1),
                layer.eps,
            )
        if isinstance(layer, nn.ReLU):
            return F.relu(h)
        if isinstance(layer, nn.MaxPool2d):
            return F.max_pool2d(
                h,
                layer.kernel_size,
                layer.stride,
                layer.padding,
                layer.dilation,
                ceil_mode=layer.ceil_mode,
            )
        if isinstance(layer, nn.AdaptiveAvgPool2d):
            return F.adaptive_avg_pool2d(h, layer.output_size)
        # A residual block (`unsupported` admits no other kind here).
        assert isinstance(layer, BasicBlock)
        out = F.relu(
            self._spatial(
                layer.norm1, pre + "norm1.", self._spatial(layer.conv1, pre + "conv1.", h)
            )
        )
        out = self._spatial(
            layer.norm2, pre + "norm2.", self._spatial(layer.conv2, pre + "conv2.", out)
        )
        short = h
        for j, sub in enumerate(layer.shortcut.children()):
            short = self._spatial(sub, f"{pre}shortcut.{j}.", short)
        return F.relu(out + short)

    def classify(self, z: torch.Tensor) -> torch.Tensor:
        """z (K, B, d) -> logits (K, B, C)."""
        return self._linear("predictor.", z)

    def step_done(self) -> None:
        """Count one training batch in every BatchNorm (its `num_batches_tracked`)."""
        for pre in self._bn:
            self.buffers[pre + "num_batches_tracked"].add_(1)

    # -- results ---------------------------------------------------------------
    def state(self, index: int) -> Tensors:
        """Client `index`'s full state dict (views into the stacks)."""
        out = {n: t[index].detach() for n, t in self.params.items()}
        out.update({n: t[index] for n, t in self.buffers.items()})
        return out


def cross_entropy_losses(
    stack: StackedClients,
    x: torch.Tensor,
    y: torch.Tensor,
    step: int,  # noqa: ARG001
) -> torch.Tensor:
    """Every client's mean cross-entropy on its batch: (K,)."""
    logits = stack.classify(stack.extract(x))
    k, b, c = logits.shape
    return (
        F.cross_entropy(logits.reshape(k * b, c), y.reshape(-1), reduction="none")
        .view(k, b)
        .mean(1)
    )


def batched_sgd(
    stack: StackedClients,
    x_all: torch.Tensor,
    y_all: torch.Tensor,
    batches: torch.Tensor,
    lrs: torch.Tensor,
    loss_fn: BatchedLoss = cross_entropy_losses,
    grad_hook: BatchedGradHook | None = None,
    augment: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """T plain SGD steps of every client at once; each client's mean loss (K,), no host sync.

    `batches` (K, T, B): client k's absolute sample indices per step (its own stream);
    `lrs` (K,): each client's learning rate; `augment`: the inputs' train-time transform.
    """
    k, steps, b = batches.shape
    order = batches.permute(1, 2, 0).contiguous()  # (T, B, K): a step's samples sample-major
    scales = [lrs.view(k, *([1] * (p.dim() - 1))) for p in stack.trainable]
    total = torch.zeros(k, device=x_all.device)
    for step in range(steps):
        x = x_all.index_select(0, order[step].view(-1))
        if augment is not None:
            x = augment(x)
        y = y_all.index_select(0, batches[:, step].reshape(-1)).view(k, b)
        losses = loss_fn(stack, x, y, step)
        grads = list(torch.autograd.grad(losses.sum(), stack.trainable))
        if grad_hook is not None:
            grad_hook(grads)
        with torch.no_grad():
            for p, g, s in zip(stack.trainable, grads, scales, strict=True):
                p.sub_(g.mul_(s))
            total += losses.detach()
        stack.step_done()
    return total / steps
