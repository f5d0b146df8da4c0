from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

T = TypeVar("T", bound="RunContext")


@_attrs_define
class RunContext:
    """The thing in the caller's application a run is attached to: a kind and an id of the
    caller's choosing (the seed's `context_type` and `entity_id`).

        Attributes:
            entity_id (str): The entity's id in the caller's system (1 to 256 characters).
            type_ (str): A kind, e.g. `project` (1 to 64 characters).
    """

    entity_id: str
    type_: str

    def to_dict(self) -> dict[str, Any]:
        entity_id = self.entity_id

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "entity_id": entity_id,
                "type": type_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        entity_id = d.pop("entity_id")

        type_ = d.pop("type")

        run_context = cls(
            entity_id=entity_id,
            type_=type_,
        )

        return run_context
