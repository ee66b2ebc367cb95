"""Shapes: circles, squares and triangles, 28x28 grey, declared on the `folder` loader.

`DECL` is the `DatasetDecl` the entry point names. Its files are a fixed npz folder layout,
``<data root>/shapes/{train,test}.npz`` (fedgen.data.folder), written by `generate` the first
time a run loads the dataset on a host where they are missing, so every worker can offer it.
A spec names it as ``data: {name: shapes}``; nothing else is needed.
"""

from __future__ import annotations

from fedgen.data.folder import folder_dataset
from fedgen.data.folder_spec import FolderSpec
from fedgen_shapes.generate import CLASSES, SIDE, generate

__all__ = ["CLASSES", "DECL", "FOLDER", "SIDE", "generate"]

#: Where and what: relative to the data root, 3 named classes of 1 x 28 x 28 images.
FOLDER = FolderSpec(path="shapes", classes=list(CLASSES), channels=1, image_size=SIDE)

DECL = folder_dataset(
    "shapes",
    "Shapes",
    FOLDER,
    prepare=generate,
    description="generated circles, squares, triangles (1x28x28, 3,000/600), <root>/shapes",
)
