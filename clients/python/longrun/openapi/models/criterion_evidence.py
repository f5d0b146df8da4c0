from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="CriterionEvidence")


@_attrs_define
class CriterionEvidence:
    """One criterion mapped to its evidence in a completion claim (`criteria_evidence`).

    Attributes:
        criterion (str): The criterion: its id as the prompt lists it (`c1`, `c2`, …) or its exact text.
        evidence (list[str] | Unset): Evidence items for it, as in `completion_evidence`: each names documents by path
            or
            plan steps as `plan:ID`.
    """

    criterion: str
    evidence: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        criterion = self.criterion

        evidence: list[str] | Unset = UNSET
        if not isinstance(self.evidence, Unset):
            evidence = self.evidence

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "criterion": criterion,
            }
        )
        if evidence is not UNSET:
            field_dict["evidence"] = evidence

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        criterion = d.pop("criterion")

        evidence = cast(list[str], d.pop("evidence", UNSET))

        criterion_evidence = cls(
            criterion=criterion,
            evidence=evidence,
        )

        criterion_evidence.additional_properties = d
        return criterion_evidence

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
