from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="CallDecision")


@_attrs_define
class CallDecision:
    """
    Attributes:
        approve (bool):
        id (str): A pending call's id (`c{iteration}.{k}`).
        reason (None | str | Unset):
    """

    approve: bool
    id: str
    reason: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        approve = self.approve

        id = self.id

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "approve": approve,
                "id": id,
            }
        )
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        approve = d.pop("approve")

        id = d.pop("id")

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))

        call_decision = cls(
            approve=approve,
            id=id,
            reason=reason,
        )

        return call_decision
