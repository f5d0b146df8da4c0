from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.step_status import StepStatus
from ..types import UNSET, Unset

T = TypeVar("T", bound="PlanStep")


@_attrs_define
class PlanStep:
    """
    Attributes:
        id (str):
        iteration_last_touched (int):
        status (StepStatus):
        title (str):
        notes (None | str | Unset): The last note an executor left on the step it worked on.
    """

    id: str
    iteration_last_touched: int
    status: StepStatus
    title: str
    notes: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        iteration_last_touched = self.iteration_last_touched

        status = self.status.value

        title = self.title

        notes: None | str | Unset
        if isinstance(self.notes, Unset):
            notes = UNSET
        else:
            notes = self.notes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "iteration_last_touched": iteration_last_touched,
                "status": status,
                "title": title,
            }
        )
        if notes is not UNSET:
            field_dict["notes"] = notes

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        iteration_last_touched = d.pop("iteration_last_touched")

        status = StepStatus(d.pop("status"))

        title = d.pop("title")

        def _parse_notes(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        notes = _parse_notes(d.pop("notes", UNSET))

        plan_step = cls(
            id=id,
            iteration_last_touched=iteration_last_touched,
            status=status,
            title=title,
            notes=notes,
        )

        plan_step.additional_properties = d
        return plan_step

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
