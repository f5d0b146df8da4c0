from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.plan_status import PlanStatus

if TYPE_CHECKING:
    from ..models.plan_step import PlanStep


T = TypeVar("T", bound="PlanArtifact")


@_attrs_define
class PlanArtifact:
    """A plan the run worked to, its status read from its steps.

    Attributes:
        id (str): `plan`: what completion evidence names its steps by (`plan:ID`).
        status (PlanStatus): `not_started`: Every step is pending.

            `blocked`: A step is blocked and not every step is done.

            `completed`: Every step is done.
        steps (list[PlanStep]):
    """

    id: str
    status: PlanStatus
    steps: list[PlanStep]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        status = self.status.value

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "status": status,
                "steps": steps,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.plan_step import PlanStep

        d = dict(src_dict)
        id = d.pop("id")

        status = PlanStatus(d.pop("status"))

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = PlanStep.from_dict(steps_item_data)

            steps.append(steps_item)

        plan_artifact = cls(
            id=id,
            status=status,
            steps=steps,
        )

        plan_artifact.additional_properties = d
        return plan_artifact

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
