"""The one declaration of every per-round metric: key, readable name, unit, where it is drawn.

The runner and the algorithms write metrics under these keys (`RoundEvent.metrics`); the
CLI, the API's descriptions and every dashboard page take the readable name and the unit
from here, so "test_acc" is "test accuracy (%)" everywhere and a new metric is named once.
Accuracies are stored as fractions and shown in percent (`percent`).

Where a metric appears is declared here too: `chart` names the Live page chart (one of
`LIVE_CHARTS`) it is a line (or, on a stacked chart, a part) of, and `compare` puts it in
the Compare page's metric list (and so its CSV). The Live and Compare pages, the charts'
legends and the CSV's column read these, so adding a Live/Compare metric is this file plus
the code that computes it (docs/architecture.md, "How to add a metric").
"""

from __future__ import annotations

from dataclasses import dataclass

# The whole round's wall-clock time: a run's wall-clock axis, seconds to a target and its ETA
# are summed from it.
ROUND_TIME = "time_total_ms"


@dataclass(frozen=True)
class MetricName:
    """How one metric key is shown. `unit` is what its shown value is in ('%' for accuracies,
    which are stored as fractions); `about` says what it measures."""

    key: str
    title: str
    unit: str
    about: str
    common: bool = True  # written by every algorithm (False: one algorithm's own key)
    chart: str = ""  # the key of the Live chart it is drawn on ("" none; see LIVE_CHARTS)
    compare: bool = False  # offered in the Compare page's metric list
    legend: str = ""  # its name in a chart's legend when not its title

    @property
    def legend_name(self) -> str:
        """The name of its line (or bar) in a Live chart's legend."""
        return self.legend or self.title

    @property
    def csv_column(self) -> str:
        """Its column in a downloaded CSV: the key, `_pct` added when shown in %."""
        return f"{self.key}_pct" if self.percent else self.key

    @property
    def percent(self) -> bool:
        """An accuracy: stored as a fraction in [0, 1], shown × 100 in %."""
        return self.unit == "%"

    @property
    def label(self) -> str:
        """The axis or column title: 'test accuracy (%)', 'training loss'."""
        return f"{self.title} ({self.unit})" if self.unit else self.title


@dataclass(frozen=True)
class LiveChart:
    """One chart of the Live page. Its lines are the metrics declared with `chart=key`, in
    declaration order (accuracies × 100). With `total` it is a stacked bar chart: the
    metrics are parts of `total`, and the rest of `total` is drawn as "other"."""

    key: str
    title: str
    axis: str  # the y axis title, with its unit
    scale: float = 1.0  # shown value = stored value × scale (ms -> s: 0.001)
    total: str = ""


# The Live page's charts, in the page's order.
LIVE_CHARTS = (
    LiveChart("accuracy", "Test accuracy", "test accuracy (%)"),
    LiveChart("loss", "Loss", "cross-entropy loss"),
    LiveChart("timing", "Time per round by phase", "time per round (s)", 0.001, ROUND_TIME),
    LiveChart("generator_loss", "FedGen generator losses", "loss"),
    LiveChart("generator_acc", "FedGen generator: ensemble accuracy", "accuracy (%)"),
)

_ALL = (
    MetricName(
        "test_acc",
        "test accuracy",
        "%",
        "accuracy of the evaluated model on the run's test protocol",
        chart="accuracy",
        compare=True,
        legend="global model (test set)",
    ),
    MetricName(
        "test_loss",
        "test loss",
        "",
        "cross-entropy on the same samples",
        chart="loss",
        compare=True,
    ),
    MetricName(
        "user_acc_mean",
        "mean per-user accuracy",
        "%",
        "mean of the per-user test accuracies",
        chart="accuracy",
        compare=True,
        legend="mean over users",
    ),
    MetricName(
        "user_acc_min",
        "worst user's accuracy",
        "%",
        "worst user's test accuracy",
        chart="accuracy",
        compare=True,
        legend="worst user",
    ),
    MetricName(
        "train_loss",
        "training loss",
        "",
        "mean local training loss of the selected users",
        chart="loss",
        compare=True,
    ),
    MetricName(
        "val_acc",
        "validation accuracy",
        "%",
        "the global model's accuracy on the users' validation data (partition.val_fraction > 0)",
        common=False,
        chart="accuracy",
        compare=True,
        legend="global model (validation)",
    ),
    MetricName(
        "val_loss",
        "validation loss",
        "",
        "cross-entropy on the same samples (partition.val_fraction > 0)",
        common=False,
        chart="loss",
        compare=True,
    ),
    MetricName("lr", "learning rate", "", "client learning rate used this round"),
    MetricName("bytes_down", "bytes down", "B", "bytes sent from the server to the selected users"),
    MetricName("bytes_up", "bytes up", "B", "bytes sent from the selected users to the server"),
    MetricName(
        "time_train_ms",
        "local training time",
        "ms",
        "local training, all selected users together",
        chart="timing",
        legend="local training",
    ),
    MetricName("time_user_ms", "time per user", "ms", "local training per selected user (mean)"),
    MetricName(
        "time_server_ms",
        "server time",
        "ms",
        "server work: aggregation, generator or distillation",
        chart="timing",
        legend="server",
    ),
    MetricName(
        "time_eval_ms", "evaluation time", "ms", "evaluation", chart="timing", legend="evaluation"
    ),
    MetricName(ROUND_TIME, "round time", "ms", "the whole round"),
    MetricName(
        "gen_teacher_loss",
        "generator teacher loss",
        "",
        "FedGen: the generator's cross-entropy against the clients' prediction layers",
        common=False,
        chart="generator_loss",
    ),
    MetricName(
        "gen_diversity_loss",
        "generator diversity loss",
        "",
        "FedGen: the generator's diversity term",
        common=False,
        chart="generator_loss",
    ),
    MetricName(
        "gen_ensemble_acc",
        "generator ensemble accuracy",
        "%",
        "FedGen: how often the clients' ensemble predicts the label the generator was asked for",
        common=False,
        chart="generator_acc",
    ),
    MetricName(
        "gen_train_ms",
        "generator training time",
        "ms",
        "FedGen: the server's generator steps",
        common=False,
    ),
    MetricName(
        "distill_loss",
        "distillation loss",
        "",
        "FedDF: the server's distillation loss",
        common=False,
    ),
    MetricName(
        "distill_steps_run",
        "distillation steps",
        "",
        "FedDF: distillation steps run this round",
        common=False,
    ),
    MetricName(
        "distill_best_step",
        "best distillation step",
        "",
        "FedDF: the step kept by validation",
        common=False,
    ),
    MetricName(
        "val_acc_start",
        "validation accuracy before distillation",
        "%",
        "FedDF: before the server's distillation",
        common=False,
    ),
    MetricName(
        "val_acc_best", "best validation accuracy", "%", "FedDF: the kept step's", common=False
    ),
)

METRICS: dict[str, MetricName] = {m.key: m for m in _ALL}

# The Compare page's metric list, in this order (its first is the page's default).
COMPARE_METRICS = tuple(m.key for m in _ALL if m.compare)


def on_chart(chart: str) -> tuple[MetricName, ...]:
    """The metrics drawn on the Live chart `chart`, in declaration order."""
    return tuple(m for m in _ALL if m.chart == chart)


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
