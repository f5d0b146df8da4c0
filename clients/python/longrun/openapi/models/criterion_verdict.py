from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.check_kind import CheckKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="CriterionVerdict")


@_attrs_define
class CriterionVerdict:
    """The outcome of one criterion at one completion claim.

    Attributes:
        criterion (str): The criterion as written (a check's, described).
        id (str): `c1`, `c2`, … as the prompt lists the criteria.
        kind (CheckKind): What a verdict's criterion was, as events, records and reports name it.

            `mapped`: Plain text, mapped to evidence only (the run turned grading off).

            `grader`: Plain text or a rubric, judged by the grader.
        passed (bool):
        reason (str): Why it passed or failed: the grader's reasons, a command's exit code and output tail,
            the text looked for.
        looked_at (list[str] | Unset): What the verdict looked at: documents by path, the command run.
    """

    criterion: str
    id: str
    kind: CheckKind
    passed: bool
    reason: str
    looked_at: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        criterion = self.criterion

        id = self.id

        kind = self.kind.value

        passed = self.passed

        reason = self.reason

        looked_at: list[str] | Unset = UNSET
        if not isinstance(self.looked_at, Unset):
            looked_at = self.looked_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "criterion": criterion,
                "id": id,
                "kind": kind,
                "passed": passed,
                "reason": reason,
            }
        )
        if looked_at is not UNSET:
            field_dict["looked_at"] = looked_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        criterion = d.pop("criterion")

        id = d.pop("id")

        kind = CheckKind(d.pop("kind"))

        passed = d.pop("passed")

        reason = d.pop("reason")

        looked_at = cast(list[str], d.pop("looked_at", UNSET))

        criterion_verdict = cls(
            criterion=criterion,
            id=id,
            kind=kind,
            passed=passed,
            reason=reason,
            looked_at=looked_at,
        )

        criterion_verdict.additional_properties = d
        return criterion_verdict

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
