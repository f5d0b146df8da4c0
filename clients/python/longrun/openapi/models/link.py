from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.entity_type import EntityType
from ..models.relationship import Relationship

T = TypeVar("T", bound="Link")


@_attrs_define
class Link:
    """
    Attributes:
        from_id (str):
        from_type (EntityType): What a report's change or link names.

            `document`: A workspace document; its id is its path.

            `plan_step`: A step of the run's plan; its id is the step's.

            `run`: A run; its id is the run's.
        relationship (Relationship): `derived_from`: The document `from` was written after reading the document `to`
            (`doc:PATH` sources).

            `supports`: The completion evidence cites `from` for the run `to`.
        to_id (str):
        to_type (EntityType): What a report's change or link names.

            `document`: A workspace document; its id is its path.

            `plan_step`: A step of the run's plan; its id is the step's.

            `run`: A run; its id is the run's.
    """

    from_id: str
    from_type: EntityType
    relationship: Relationship
    to_id: str
    to_type: EntityType
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from_id = self.from_id

        from_type = self.from_type.value

        relationship = self.relationship.value

        to_id = self.to_id

        to_type = self.to_type.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "from_id": from_id,
                "from_type": from_type,
                "relationship": relationship,
                "to_id": to_id,
                "to_type": to_type,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        from_id = d.pop("from_id")

        from_type = EntityType(d.pop("from_type"))

        relationship = Relationship(d.pop("relationship"))

        to_id = d.pop("to_id")

        to_type = EntityType(d.pop("to_type"))

        link = cls(
            from_id=from_id,
            from_type=from_type,
            relationship=relationship,
            to_id=to_id,
            to_type=to_type,
        )

        link.additional_properties = d
        return link

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
