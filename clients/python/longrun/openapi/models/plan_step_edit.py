from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..models.step_status import StepStatus

T = TypeVar("T", bound="PlanStepEdit")


@_attrs_define
class PlanStepEdit:
    """
    Attributes:
        id (str):
        status (StepStatus):
        title (str):
    """

    id: str
    status: StepStatus
    title: str

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        status = self.status.value

        title = self.title

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "status": status,
                "title": title,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        status = StepStatus(d.pop("status"))

        title = d.pop("title")

        plan_step_edit = cls(
            id=id,
            status=status,
            title=title,
        )

        return plan_step_edit
