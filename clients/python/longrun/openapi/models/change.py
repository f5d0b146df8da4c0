from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.entity_type import EntityType

T = TypeVar("T", bound="Change")


@_attrs_define
class Change:
    """One thing the run created or updated.

    Attributes:
        id (str):
        iteration (int): The iteration that last wrote the document or touched the step (0: not known, in a
            report stored before it was kept).
        title (str):
        type_ (EntityType): What a report's change or link names.

            `document`: A workspace document; its id is its path.

            `plan_step`: A step of the run's plan; its id is the step's.

            `run`: A run; its id is the run's.
    """

    id: str
    iteration: int
    title: str
    type_: EntityType
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        iteration = self.iteration

        title = self.title

        type_ = self.type_.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "iteration": iteration,
                "title": title,
                "type": type_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        iteration = d.pop("iteration")

        title = d.pop("title")

        type_ = EntityType(d.pop("type"))

        change = cls(
            id=id,
            iteration=iteration,
            title=title,
            type_=type_,
        )

        change.additional_properties = d
        return change

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
