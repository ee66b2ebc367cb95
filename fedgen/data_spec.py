"""The spec's `data` section: which dataset (a registered name) and its files.

`DatasetName`, `ProxyName` and `StudyDatasetName` validate a name against the dataset registry
(`fedgen.data.registry`, plugins included) and list the registered names in the JSON
schema; `DataSpec` is the section itself, `FolderSpec` the `folder` dataset's files.
`fedgen.spec` re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError

from fedgen.data.registry import BUILTINS, dataset_names, get_dataset
from fedgen.spec_base import MAX_CLASSES, CrossFieldError, StrictModel


def _registered_dataset(name: str) -> str:
    if name not in dataset_names():
        raise PydanticCustomError(
            "unknown_dataset",
            "unknown dataset {name}; registered: {names}",
            {"name": repr(name), "names": ", ".join(dataset_names())},
        )
    return name


def _named_alone(role: str) -> Callable[[str], str]:
    """A check that a dataset can be loaded by its name alone, as `role` needs: a dataset whose
    files the spec names (data.folder) cannot be (FedDF's proxy, a study's dataset)."""

    def check(name: str) -> str:
        if name != "heldout" and get_dataset(_registered_dataset(name)).files_in_spec:
            raise PydanticCustomError(
                "dataset_needs_files",
                "dataset {name} needs data.folder and cannot be {role}",
                {"name": repr(name), "role": role},
            )
        return name

    return check


class _DatasetEnum:
    """The JSON schema of a dataset name: an enum of the names registered when it is asked for
    (built-ins and plugins loaded at start), not a fixed list."""

    def __init__(self, *extra: str, named_alone: bool = False) -> None:
        self.extra, self.named_alone = extra, named_alone

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        names = [
            n for n in dataset_names() if not (self.named_alone and get_dataset(n).files_in_spec)
        ]
        schema.update(type="string", enum=[*self.extra, *names])
        return schema


#: A registered dataset's name (fedgen.data.registry): validated, and listed in the schema.
DatasetName = Annotated[str, AfterValidator(_registered_dataset), _DatasetEnum()]
#: FedDF's proxy: 'heldout' or a dataset that needs no data.folder.
ProxyName = Annotated[
    str, AfterValidator(_named_alone("FedDF's proxy")), _DatasetEnum("heldout", named_alone=True)
]
#: A study's dataset: one that needs no data.folder (a study sets nothing but the name).
StudyDatasetName = Annotated[
    str, AfterValidator(_named_alone("a study's dataset")), _DatasetEnum(named_alone=True)
]
#: The built-in datasets; every registered one (plugins too): `dataset_names()`. Not read from
#: the registry's look-ups here: they load the plugins, which may import this module.
DATASET_NAMES: tuple[str, ...] = tuple(d.name for d in BUILTINS)

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


# A field any dataset accepts but only some use: `x-only-when` names those values of a sibling
# field in the JSON schema, so a form shows the field for them alone (the Submit form:
# dashboard.spec_form_folder.field_rule). Only an annotation: validation is unchanged.
ONLY_WHEN = "x-only-when"
FOR_SYNTHETIC: dict[str, Any] = {ONLY_WHEN: {"name": ["synthetic"]}}


def _folder_rule(schema: dict[str, Any]) -> None:
    # The JSON schema says what `_folder_for_folder` checks: `folder` is required with name
    # 'folder' and absent (or null) with any other name (the default name included).
    schema["if"] = {"required": ["name"], "properties": {"name": {"const": "folder"}}}
    schema["then"] = {"required": ["folder"], "properties": {"folder": {"type": "object"}}}
    schema["else"] = {"properties": {"folder": {"type": "null"}}}


class DataSpec(StrictModel):
    """Which dataset to load and from where."""

    model_config = ConfigDict(json_schema_extra=_folder_rule)

    name: DatasetName = "fashion-mnist"
    root: str | None = Field(
        None,
        max_length=4096,
        pattern=r"^[^\x00]*$",
        description="Data folder in torchvision's layout; None = FEDGEN_DATA or ~/.fedgen/data "
        "(Fashion-MNIST is also found in Debian's /usr/share/datasets/fashion-mnist).",
    )
    download: bool = Field(
        False, description="Let torchvision download missing files (needs the network)."
    )
    synthetic_samples: int = Field(
        2000,
        ge=20,
        le=200_000,
        description="Training samples of the 'synthetic' dataset.",
        json_schema_extra=FOR_SYNTHETIC,
    )
    synthetic_classes: int = Field(
        10,
        ge=2,
        le=100,
        description="Classes of the 'synthetic' dataset.",
        json_schema_extra=FOR_SYNTHETIC,
    )
    folder: FolderSpec | None = Field(
        None, description="The 'folder' dataset's files, classes and image shape (required)."
    )

    @model_validator(mode="after")
    def _folder_for_folder(self) -> DataSpec:
        if self.name == "folder" and self.folder is None:
            raise CrossFieldError(("folder",), "required when data.name is 'folder'")
        if self.name != "folder" and self.folder is not None:
            raise CrossFieldError(("folder",), f"only for data.name 'folder', not {self.name!r}")
        return self

    @model_serializer(mode="wrap")
    def _without_unset_folder(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A spec without a folder dumps exactly as before the field existed, so the canonical
        # JSON, and with it spec_hash and result_hash of every stored run, stay the same.
        out = handler(self)
        if isinstance(out, dict) and out.get("folder", 0) is None:
            del out["folder"]
        return out
