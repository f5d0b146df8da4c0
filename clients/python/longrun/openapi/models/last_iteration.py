from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.executor_brief import ExecutorBrief
    from ..models.tool_result_brief import ToolResultBrief


T = TypeVar("T", bound="LastIteration")


@_attrs_define
class LastIteration:
    """What the planner is told about the previous iteration. Bounded so prompts stay flat.

    Attributes:
        created_docs (list[str]):
        executor_results (list[ExecutorBrief]):
        iteration (int):
        progress_delta (bool):
        tool_results (list[ToolResultBrief]):
        updated_docs (list[str]):
        error (None | str | Unset):
    """

    created_docs: list[str]
    executor_results: list[ExecutorBrief]
    iteration: int
    progress_delta: bool
    tool_results: list[ToolResultBrief]
    updated_docs: list[str]
    error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_docs = self.created_docs

        executor_results = []
        for executor_results_item_data in self.executor_results:
            executor_results_item = executor_results_item_data.to_dict()
            executor_results.append(executor_results_item)

        iteration = self.iteration

        progress_delta = self.progress_delta

        tool_results = []
        for tool_results_item_data in self.tool_results:
            tool_results_item = tool_results_item_data.to_dict()
            tool_results.append(tool_results_item)

        updated_docs = self.updated_docs

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_docs": created_docs,
                "executor_results": executor_results,
                "iteration": iteration,
                "progress_delta": progress_delta,
                "tool_results": tool_results,
                "updated_docs": updated_docs,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.executor_brief import ExecutorBrief
        from ..models.tool_result_brief import ToolResultBrief

        d = dict(src_dict)
        created_docs = cast(list[str], d.pop("created_docs"))

        executor_results = []
        _executor_results = d.pop("executor_results")
        for executor_results_item_data in _executor_results:
            executor_results_item = ExecutorBrief.from_dict(executor_results_item_data)

            executor_results.append(executor_results_item)

        iteration = d.pop("iteration")

        progress_delta = d.pop("progress_delta")

        tool_results = []
        _tool_results = d.pop("tool_results")
        for tool_results_item_data in _tool_results:
            tool_results_item = ToolResultBrief.from_dict(tool_results_item_data)

            tool_results.append(tool_results_item)

        updated_docs = cast(list[str], d.pop("updated_docs"))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        last_iteration = cls(
            created_docs=created_docs,
            executor_results=executor_results,
            iteration=iteration,
            progress_delta=progress_delta,
            tool_results=tool_results,
            updated_docs=updated_docs,
            error=error,
        )

        last_iteration.additional_properties = d
        return last_iteration

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
