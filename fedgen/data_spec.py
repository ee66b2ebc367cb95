"""The spec's `data` section: which dataset (a registered name) and its files.

`DatasetName`, `ProxyName` and `StudyDatasetName` validate a name against the dataset registry
(`fedgen.data.registry`, plugins included) and list the registered names in the JSON
schema; `DataSpec` is the section itself (its `folder` dataset's files: `FolderSpec`, in
`fedgen.data.folder_spec`). Import each name from the module that defines it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError

from fedgen.data.folder_spec import FolderSpec
from fedgen.data.registry import BUILTINS, dataset_names, get_dataset
from fedgen.spec_base import CrossFieldError, StrictModel


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

# A field any dataset accepts but only some use: `x-only-when` names those values of a sibling
# field in the JSON schema, so a form shows the field for them alone (the Submit form:
# dashboard.conditional_fields.field_rule). Only an annotation: validation is unchanged.
ONLY_WHEN = "x-only-when"
FOR_SYNTHETIC: dict[str, Any] = {ONLY_WHEN: {"name": ["synthetic"]}}
FOR_FEDPROX: dict[str, Any] = {ONLY_WHEN: {"name": ["synthetic-fedprox"]}}
# Fields added after specs were stored: None (unset) is left out of the dump, so the canonical
# JSON, spec_hash and result_hash of every stored spec stay the same.
_DROPPED_WHEN_NONE = ("folder", "augment", "fedprox_alpha", "fedprox_beta")


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
    augment: Literal["none", "crop-flip"] | None = Field(
        None,
        description="Train-time augmentation: 'crop-flip' (a random 32x32 crop of the image "
        "padded by 4, and a horizontal flip with probability 1/2, drawn for every batch) or "
        "'none'. None = the dataset's default: crop-flip for cifar10 and cifar100 (what the "
        "CIFAR literature trains with), none for every other dataset. Test images are never "
        "augmented.",
    )
    fedprox_alpha: float | None = Field(
        None,
        ge=0.0,
        le=100.0,
        description="synthetic-fedprox's α: the variance of the users' model means u_k "
        "(how much the users' models differ). None = 1 (Synthetic(1, 1) of the FedProx paper).",
        json_schema_extra=FOR_FEDPROX,
    )
    fedprox_beta: float | None = Field(
        None,
        ge=0.0,
        le=100.0,
        description="synthetic-fedprox's β: the variance of the users' input means B_k (how "
        "much the users' inputs differ). None = 1.",
        json_schema_extra=FOR_FEDPROX,
    )

    @model_validator(mode="after")
    def _folder_for_folder(self) -> DataSpec:
        if self.name == "folder" and self.folder is None:
            raise CrossFieldError(("folder",), "required when data.name is 'folder'")
        if self.name != "folder" and self.folder is not None:
            raise CrossFieldError(("folder",), f"only for data.name 'folder', not {self.name!r}")
        for f in ("fedprox_alpha", "fedprox_beta"):
            if getattr(self, f) is not None and self.name != "synthetic-fedprox":
                raise CrossFieldError(
                    (f,), f"only for data.name 'synthetic-fedprox', not {self.name!r}"
                )
        if self.augment == "crop-flip":
            decl = get_dataset(self.name)
            if decl.shape_for is None and min(decl.shape[1:]) < 8:
                raise CrossFieldError(
                    ("augment",),
                    f"crop-flip needs images; {self.name} has "
                    f"{'x'.join(map(str, decl.shape))} inputs: use 'none'",
                )
        return self

    @property
    def resolved_augment(self) -> str:
        """`augment`, or the dataset's default when unset."""
        return self.augment if self.augment is not None else get_dataset(self.name).augment

    @model_serializer(mode="wrap")
    def _without_unset_folder(self, handler: SerializerFunctionWrapHandler) -> Any:
        # A spec without a folder (augment, fedprox_*) dumps exactly as before the field
        # existed, so the canonical JSON, and with it spec_hash and result_hash of every stored
        # run, stay the same.
        out = handler(self)
        if isinstance(out, dict):
            for f in _DROPPED_WHEN_NONE:
                if f in out and out[f] is None:
                    del out[f]
        return out
