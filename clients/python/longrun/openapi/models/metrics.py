from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.metrics_by_model import MetricsByModel


T = TypeVar("T", bound="Metrics")


@_attrs_define
class Metrics:
    """
    Attributes:
        by_model (MetricsByModel):
        cached_tokens (int):
        cost_usd (float):
        docs (int): Workspace documents created by the run.
        input_tokens (int):
        iterations (int): Committed iterations.
        llm_calls (int):
        output_tokens (int):
        running_ms (int): Time spent inside iterations (claim to commit), never waiting time.
        unpriced_calls (int): Calls whose model had no price: their cost is unknown, never counted as zero silently.
        children_cost_usd (float | Unset):  Default: 0.0.
        children_tokens (int | Unset): Spent by finished child runs (not part of the fields above). Default: 0.
        tool_calls (int | Unset): Tool calls made (counted against `budgets.max_tool_calls`). Default: 0.
    """

    by_model: MetricsByModel
    cached_tokens: int
    cost_usd: float
    docs: int
    input_tokens: int
    iterations: int
    llm_calls: int
    output_tokens: int
    running_ms: int
    unpriced_calls: int
    children_cost_usd: float | Unset = 0.0
    children_tokens: int | Unset = 0
    tool_calls: int | Unset = 0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        by_model = self.by_model.to_dict()

        cached_tokens = self.cached_tokens

        cost_usd = self.cost_usd

        docs = self.docs

        input_tokens = self.input_tokens

        iterations = self.iterations

        llm_calls = self.llm_calls

        output_tokens = self.output_tokens

        running_ms = self.running_ms

        unpriced_calls = self.unpriced_calls

        children_cost_usd = self.children_cost_usd

        children_tokens = self.children_tokens

        tool_calls = self.tool_calls

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "by_model": by_model,
                "cached_tokens": cached_tokens,
                "cost_usd": cost_usd,
                "docs": docs,
                "input_tokens": input_tokens,
                "iterations": iterations,
                "llm_calls": llm_calls,
                "output_tokens": output_tokens,
                "running_ms": running_ms,
                "unpriced_calls": unpriced_calls,
            }
        )
        if children_cost_usd is not UNSET:
            field_dict["children_cost_usd"] = children_cost_usd
        if children_tokens is not UNSET:
            field_dict["children_tokens"] = children_tokens
        if tool_calls is not UNSET:
            field_dict["tool_calls"] = tool_calls

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.metrics_by_model import MetricsByModel

        d = dict(src_dict)
        by_model = MetricsByModel.from_dict(d.pop("by_model"))

        cached_tokens = d.pop("cached_tokens")

        cost_usd = d.pop("cost_usd")

        docs = d.pop("docs")

        input_tokens = d.pop("input_tokens")

        iterations = d.pop("iterations")

        llm_calls = d.pop("llm_calls")

        output_tokens = d.pop("output_tokens")

        running_ms = d.pop("running_ms")

        unpriced_calls = d.pop("unpriced_calls")

        children_cost_usd = d.pop("children_cost_usd", UNSET)

        children_tokens = d.pop("children_tokens", UNSET)

        tool_calls = d.pop("tool_calls", UNSET)

        metrics = cls(
            by_model=by_model,
            cached_tokens=cached_tokens,
            cost_usd=cost_usd,
            docs=docs,
            input_tokens=input_tokens,
            iterations=iterations,
            llm_calls=llm_calls,
            output_tokens=output_tokens,
            running_ms=running_ms,
            unpriced_calls=unpriced_calls,
            children_cost_usd=children_cost_usd,
            children_tokens=children_tokens,
            tool_calls=tool_calls,
        )

        metrics.additional_properties = d
        return metrics

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
