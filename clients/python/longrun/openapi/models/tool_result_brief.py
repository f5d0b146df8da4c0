from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="ToolResultBrief")


@_attrs_define
class ToolResultBrief:
    """
    Attributes:
        name (str):
        ok (bool):
        result (str):
        repaired (bool | Unset):
    """

    name: str
    ok: bool
    result: str
    repaired: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        ok = self.ok

        result = self.result

        repaired = self.repaired

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "ok": ok,
                "result": result,
            }
        )
        if repaired is not UNSET:
            field_dict["repaired"] = repaired

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        ok = d.pop("ok")

        result = d.pop("result")

        repaired = d.pop("repaired", UNSET)

        tool_result_brief = cls(
            name=name,
            ok=ok,
            result=result,
            repaired=repaired,
        )

        tool_result_brief.additional_properties = d
        return tool_result_brief

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
