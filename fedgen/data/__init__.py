"""Datasets (torchvision layouts, synthetic) and their federated splits.

The names are resolved on first use (PEP 562), so that importing a light submodule
(`fedgen.data.partition`, `fedgen.data.common`) does not load torch through
`fedgen.data.datasets`: `fedgen validate` never needs torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fedgen.data.datasets import DatasetError, DatasetTensors, load_dataset
    from fedgen.data.partition import (
        Partition,
        PartitionError,
        build_partition,
        dirichlet_partition,
        group_partition,
        official_partition,
    )

__all__ = [
    "DatasetError",
    "DatasetTensors",
    "Partition",
    "PartitionError",
    "build_partition",
    "dirichlet_partition",
    "group_partition",
    "load_dataset",
    "official_partition",
]

_HOME = {
    "DatasetError": "fedgen.data.common",
    "DatasetTensors": "fedgen.data.common",
    "load_dataset": "fedgen.data.datasets",
    "Partition": "fedgen.data.partition",
    "PartitionError": "fedgen.data.partition",
    "build_partition": "fedgen.data.partition",
    "dirichlet_partition": "fedgen.data.partition",
    "group_partition": "fedgen.data.partition",
    "official_partition": "fedgen.data.partition",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'fedgen.data' has no attribute {name!r}")
