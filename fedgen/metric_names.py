"""The one declaration of every per-round metric: its key, the name people read, its unit.

The runner and the algorithms write metrics under these keys (`RoundEvent.metrics`); the
CLI, the API's descriptions and every dashboard page take the readable name and the unit
from here, so "test_acc" is "test accuracy (%)" everywhere and a new metric is named once.
Accuracies are stored as fractions and shown in percent (`percent`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricName:
    """How one metric key is shown. `unit` is what its shown value is in ('%' for accuracies,
    which are stored as fractions); `about` says what it measures."""

    key: str
    title: str
    unit: str
    about: str
    common: bool = True  # written by every algorithm (False: one algorithm's own key)

    @property
    def percent(self) -> bool:
        """An accuracy: stored as a fraction in [0, 1], shown × 100 in %."""
        return self.unit == "%"

    @property
    def label(self) -> str:
        """The axis or column title: 'test accuracy (%)', 'training loss'."""
        return f"{self.title} ({self.unit})" if self.unit else self.title


_ALL = (
    MetricName("test_acc", "test accuracy", "%", "accuracy of the evaluated model on the run's test protocol"),
    MetricName("test_loss", "test loss", "", "cross-entropy on the same samples"),
    MetricName("user_acc_mean", "mean per-user accuracy", "%", "mean of the per-user test accuracies"),
    MetricName("user_acc_min", "worst user's accuracy", "%", "worst user's test accuracy"),
    MetricName("train_loss", "training loss", "", "mean local training loss of the selected users"),
    MetricName("lr", "learning rate", "", "client learning rate used this round"),
    MetricName("bytes_down", "bytes down", "B", "bytes sent from the server to the selected users"),
    MetricName("bytes_up", "bytes up", "B", "bytes sent from the selected users to the server"),
    MetricName("time_train_ms", "local training time", "ms", "local training, all selected users together"),
    MetricName("time_user_ms", "time per user", "ms", "local training per selected user (mean)"),
    MetricName("time_server_ms", "server time", "ms", "server work: aggregation, generator or distillation"),
    MetricName("time_eval_ms", "evaluation time", "ms", "evaluation"),
    MetricName("time_total_ms", "round time", "ms", "the whole round"),
    MetricName("gen_teacher_loss", "generator teacher loss", "", "FedGen: the generator's cross-entropy against the clients' prediction layers", common=False),
    MetricName("gen_diversity_loss", "generator diversity loss", "", "FedGen: the generator's diversity term", common=False),
    MetricName("gen_ensemble_acc", "generator ensemble accuracy", "%", "FedGen: how often the clients' ensemble predicts the label the generator was asked for", common=False),
    MetricName("gen_train_ms", "generator training time", "ms", "FedGen: the server's generator steps", common=False),
    MetricName("distill_loss", "distillation loss", "", "FedDF: the server's distillation loss", common=False),
    MetricName("distill_steps_run", "distillation steps", "", "FedDF: distillation steps run this round", common=False),
    MetricName("distill_best_step", "best distillation step", "", "FedDF: the step kept by validation", common=False),
    MetricName("val_acc_start", "validation accuracy before distillation", "%", "FedDF: before the server's distillation", common=False),
    MetricName("val_acc_best", "best validation accuracy", "%", "FedDF: the kept step's", common=False),
)  # fmt: skip

METRICS: dict[str, MetricName] = {m.key: m for m in _ALL}

# The curves a chart offers first, in this order.
CHART_METRICS = ("test_acc", "test_loss", "user_acc_mean", "user_acc_min", "train_loss")


def metric_name(key: str) -> MetricName:
    """The declaration of `key`; an unknown key (a plugin's) is shown as itself, no unit."""
    found = METRICS.get(key)
    if found is not None:
        return found
    return MetricName(key, key.replace("_", " "), "", key, common=False)


def title(key: str) -> str:
    """The readable name of `key`: 'test accuracy'."""
    return metric_name(key).title


def label(key: str) -> str:
    """The readable name with its unit: 'test accuracy (%)'."""
    return metric_name(key).label


def is_percent(key: str) -> bool:
    """True for an accuracy (stored as a fraction, shown in %)."""
    return metric_name(key).percent
