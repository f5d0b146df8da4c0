from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.step_status import StepStatus

T = TypeVar("T", bound="PlanStep")


@_attrs_define
class PlanStep:
    """
    Attributes:
        id (str):
        iteration_last_touched (int):
        status (StepStatus):
        title (str):
    """

    id: str
    iteration_last_touched: int
    status: StepStatus
    title: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        iteration_last_touched = self.iteration_last_touched

        status = self.status.value

        title = self.title

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

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        iteration_last_touched = d.pop("iteration_last_touched")

        status = StepStatus(d.pop("status"))

        title = d.pop("title")

        plan_step = cls(
            id=id,
            iteration_last_touched=iteration_last_touched,
            status=status,
            title=title,
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
