from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.tool_result_brief import ToolResultBrief


T = TypeVar("T", bound="ExecutorBrief")


@_attrs_define
class ExecutorBrief:
    """
    Attributes:
        summary (str):
        title (str):
        tool_results (list[ToolResultBrief]):
    """

    summary: str
    title: str
    tool_results: list[ToolResultBrief]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        summary = self.summary

        title = self.title

        tool_results = []
        for tool_results_item_data in self.tool_results:
            tool_results_item = tool_results_item_data.to_dict()
            tool_results.append(tool_results_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "summary": summary,
                "title": title,
                "tool_results": tool_results,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.tool_result_brief import ToolResultBrief

        d = dict(src_dict)
        summary = d.pop("summary")

        title = d.pop("title")

        tool_results = []
        _tool_results = d.pop("tool_results")
        for tool_results_item_data in _tool_results:
            tool_results_item = ToolResultBrief.from_dict(tool_results_item_data)

            tool_results.append(tool_results_item)

        executor_brief = cls(
            summary=summary,
            title=title,
            tool_results=tool_results,
        )

        executor_brief.additional_properties = d
        return executor_brief

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
