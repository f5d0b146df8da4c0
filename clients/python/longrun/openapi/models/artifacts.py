from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.artifact_ref import ArtifactRef
    from ..models.plan_artifact import PlanArtifact


T = TypeVar("T", bound="Artifacts")


@_attrs_define
class Artifacts:
    """The run's outputs: its documents, and its plans with their status.

    Attributes:
        documents (list[ArtifactRef]):
        plans (list[PlanArtifact]): The run's plan as it stands, when it has one (a run has one plan).
    """

    documents: list[ArtifactRef]
    plans: list[PlanArtifact]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        documents = []
        for documents_item_data in self.documents:
            documents_item = documents_item_data.to_dict()
            documents.append(documents_item)

        plans = []
        for plans_item_data in self.plans:
            plans_item = plans_item_data.to_dict()
            plans.append(plans_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "documents": documents,
                "plans": plans,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.artifact_ref import ArtifactRef
        from ..models.plan_artifact import PlanArtifact

        d = dict(src_dict)
        documents = []
        _documents = d.pop("documents")
        for documents_item_data in _documents:
            documents_item = ArtifactRef.from_dict(documents_item_data)

            documents.append(documents_item)

        plans = []
        _plans = d.pop("plans")
        for plans_item_data in _plans:
            plans_item = PlanArtifact.from_dict(plans_item_data)

            plans.append(plans_item)

        artifacts = cls(
            documents=documents,
            plans=plans,
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
