"""The `folder` dataset's section of a spec (`data.folder`): a lab's own images.

Kept apart from `fedgen.data_spec` (whose `DataSpec` holds it; import `FolderSpec` from here): the folder dataset's declaration and
checks (`fedgen.data.folder`) read it, and `fedgen.data_spec` validates dataset names against
the registry that holds that declaration, so this section sits below both.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, ValidationError, ValidatorFunctionWrapHandler, field_validator
from pydantic_core import PydanticCustomError

from fedgen.spec_base import MAX_CLASSES, StrictModel

ClassName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^\x00/]*$")]


class FolderSpec(StrictModel):
    """The `folder` dataset: a lab's own images (fedgen.data.folder; docs/architecture.md).

    Layouts, found in `path`: ImageFolder, ``train/<class>/*.png|jpg`` and ``test/<class>/...``
    (classes in sorted folder-name order, each image converted to `channels` and resized to
    `image_size`); or ``train.npz`` and ``test.npz`` holding ``x`` (N, H, W) or (N, C, H, W),
    uint8 (scaled to [-1, 1] like MNIST) or float (used as is), and ``y`` (N,) integer labels
    in 0..classes-1, with H = W = image_size and C = channels.
    """

    path: str = Field(
        min_length=1,
        max_length=4096,
        pattern=r"^[^\x00]*$",
        description="The dataset's folder: absolute, or relative to the data root (data.root, "
        "else FEDGEN_DATA, else ~/.fedgen/data) of the host that runs it.",
    )
    classes: (
        Annotated[int, Field(ge=2, le=MAX_CLASSES)]
        | Annotated[
            list[ClassName],
            Field(min_length=2, max_length=MAX_CLASSES, json_schema_extra={"uniqueItems": True}),
        ]
    ) = Field(
        description="How many classes (labels 0..n-1), or their names (ImageFolder: the class "
        "folders, in this order; npz: label i is the i-th name)."
    )
    channels: int = Field(1, ge=1, le=4, description="C of every image (1 grey, 3 RGB).")
    image_size: int = Field(
        28, ge=8, le=256, description="H = W of every image; the model is built for it."
    )

    @field_validator("classes", mode="wrap")
    @classmethod
    def _one_classes_error(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        # One message for the field, not one per branch of the union.
        try:
            out = handler(value)
        except ValidationError:
            raise PydanticCustomError(
                "folder_classes",
                "expected a class count 2..{limit} or a list of 2..{limit} distinct names "
                "(1-64 characters, no '/')",
                {"limit": MAX_CLASSES},
            ) from None
        if isinstance(out, list) and len(set(out)) != len(out):
            raise PydanticCustomError("folder_classes", "class names must be distinct")
        return out

    @property
    def num_classes(self) -> int:
        return self.classes if isinstance(self.classes, int) else len(self.classes)
