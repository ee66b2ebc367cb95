"""The spec's JSON schema (GET /spec/schema) as typed, frozen nodes: what the Submit form
(dashboard.spec_form, dashboard.conditional_fields, dashboard.submit_page.form_checks) reads
of it, attributes instead of dict look-ups.

`SchemaNode` holds one node of the schema with the keywords the form reads under their
Python names (`exclusive_minimum` for `exclusiveMinimum`, `ref` for `$ref`, `if_` for `if`,
`only_when` for `x-only-when`); every other keyword is kept as an extra, so a node dumps
back (`as_json`) to the JSON it was parsed from and compares equal to it. The whole answer
is parsed once (`SchemaNode.of`); `resolve` follows a `#/$defs/...` reference in the root's
`$defs`, as the form always did.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_DEFS = "#/$defs/"


class Discriminator(BaseModel):
    """A tagged union's discriminator: its property and {value: `$ref` of that member}."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)

    property_name: str = Field("", alias="propertyName")
    mapping: dict[str, str] = Field(default_factory=dict)


class SchemaNode(BaseModel):
    """One JSON-schema node: the keywords the form reads, the rest kept as extras."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)

    type: str | list[str] | None = None
    title: str | None = None
    description: str | None = None
    default: Any = None
    enum: list[Any] | None = None
    const: Any = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    exclusive_minimum: int | float | None = Field(None, alias="exclusiveMinimum")
    exclusive_maximum: int | float | None = Field(None, alias="exclusiveMaximum")
    min_length: int | None = Field(None, alias="minLength")
    max_length: int | None = Field(None, alias="maxLength")
    pattern: str | None = None
    min_items: int | None = Field(None, alias="minItems")
    max_items: int | None = Field(None, alias="maxItems")
    items: SchemaNode | None = None
    properties: dict[str, SchemaNode] = Field(default_factory=dict)
    required: list[str] = Field(default_factory=list)
    any_of: list[SchemaNode] | None = Field(None, alias="anyOf")
    one_of: list[SchemaNode] | None = Field(None, alias="oneOf")
    discriminator: Discriminator | None = None
    ref: str | None = Field(None, alias="$ref")
    defs: dict[str, SchemaNode] = Field(default_factory=dict, alias="$defs")
    if_: SchemaNode | None = Field(None, alias="if")
    then: SchemaNode | None = None
    else_: SchemaNode | None = Field(None, alias="else")
    only_when: Any = Field(None, alias="x-only-when")  # fedgen.data_spec.ONLY_WHEN

    @classmethod
    def of(cls, node: SchemaNode | Mapping[str, Any]) -> SchemaNode:
        """`node` as a SchemaNode (parsed from its JSON when it is not one already)."""
        return node if isinstance(node, SchemaNode) else cls.model_validate(dict(node))

    @property
    def has_const(self) -> bool:
        """Whether the node states a `const` (a value the form cannot edit), null included."""
        return "const" in self.model_fields_set

    @property
    def has_enum(self) -> bool:
        """Whether the node lists its values (`enum`)."""
        return self.enum is not None

    @property
    def is_null(self) -> bool:
        """Whether the node is the `{"type": "null"}` option of an `X | None`."""
        return self.type == "null"

    def non_null(self) -> list[SchemaNode]:
        """The options of an `anyOf` other than null (the node itself when it has none)."""
        return [o for o in (self.any_of if self.any_of is not None else [self]) if not o.is_null]

    def resolve(self, root: SchemaNode) -> SchemaNode:
        """The node a `#/$defs/Name` reference names in `root`'s `$defs`, else this node."""
        if self.ref is not None and self.ref.startswith(_DEFS):
            return root.defs[self.ref.split("/")[-1]]
        return self

    def as_json(self) -> dict[str, Any]:
        """The node as the JSON it was parsed from (keywords under their schema names)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self.as_json() == dict(other)
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # a node holds lists: not hashable
