from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="IterationMetrics")


@_attrs_define
class IterationMetrics:
    """
    Attributes:
        cost_usd (float):
        input_tokens (int):
        llm_calls (int):
        output_tokens (int):
        running_ms (int):
        tool_calls (int | Unset):  Default: 0.
    """

    cost_usd: float
    input_tokens: int
    llm_calls: int
    output_tokens: int
    running_ms: int
    tool_calls: int | Unset = 0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cost_usd = self.cost_usd

        input_tokens = self.input_tokens

        llm_calls = self.llm_calls

        output_tokens = self.output_tokens

        running_ms = self.running_ms

        tool_calls = self.tool_calls

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cost_usd": cost_usd,
                "input_tokens": input_tokens,
                "llm_calls": llm_calls,
                "output_tokens": output_tokens,
                "running_ms": running_ms,
            }
        )
        if tool_calls is not UNSET:
            field_dict["tool_calls"] = tool_calls

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cost_usd = d.pop("cost_usd")

        input_tokens = d.pop("input_tokens")

        llm_calls = d.pop("llm_calls")

        output_tokens = d.pop("output_tokens")

        running_ms = d.pop("running_ms")

        tool_calls = d.pop("tool_calls", UNSET)

        iteration_metrics = cls(
            cost_usd=cost_usd,
            input_tokens=input_tokens,
            llm_calls=llm_calls,
            output_tokens=output_tokens,
            running_ms=running_ms,
            tool_calls=tool_calls,
        )

        iteration_metrics.additional_properties = d
        return iteration_metrics

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
