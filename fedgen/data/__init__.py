"""Datasets (torchvision layouts, synthetic) and their federated splits."""

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
