from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.artifact_ref import ArtifactRef
    from ..models.plan_step import PlanStep


T = TypeVar("T", bound="Artifacts")


@_attrs_define
class Artifacts:
    """The run's outputs: its documents, and its plan as it stands.

    Attributes:
        documents (list[ArtifactRef]):
        plan (list[PlanStep]):
    """

    documents: list[ArtifactRef]
    plan: list[PlanStep]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        documents = []
        for documents_item_data in self.documents:
            documents_item = documents_item_data.to_dict()
            documents.append(documents_item)

        plan = []
        for plan_item_data in self.plan:
            plan_item = plan_item_data.to_dict()
            plan.append(plan_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "documents": documents,
                "plan": plan,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.artifact_ref import ArtifactRef
        from ..models.plan_step import PlanStep

        d = dict(src_dict)
        documents = []
        _documents = d.pop("documents")
        for documents_item_data in _documents:
            documents_item = ArtifactRef.from_dict(documents_item_data)

            documents.append(documents_item)

        plan = []
        _plan = d.pop("plan")
        for plan_item_data in _plan:
            plan_item = PlanStep.from_dict(plan_item_data)

            plan.append(plan_item)

        artifacts = cls(
            documents=documents,
            plan=plan,
        )

        artifacts.additional_properties = d
        return artifacts

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
