from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="Budgets")


@_attrs_define
class Budgets:
    """Hard limits of a run. Waiting time never counts against `max_running_ms`.

    Attributes:
        max_cost_usd (float | None | Unset):
        max_iterations (int | Unset):  Default: 25.
        max_running_ms (int | Unset):  Default: 3600000.
        max_tokens (int | None | Unset):
        max_tool_calls (int | None | Unset): Tool calls over the whole run (planner, repair and executor calls alike).
    """

    max_cost_usd: float | None | Unset = UNSET
    max_iterations: int | Unset = 25
    max_running_ms: int | Unset = 3600000
    max_tokens: int | None | Unset = UNSET
    max_tool_calls: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_cost_usd: float | None | Unset
        if isinstance(self.max_cost_usd, Unset):
            max_cost_usd = UNSET
        else:
            max_cost_usd = self.max_cost_usd

        max_iterations = self.max_iterations

        max_running_ms = self.max_running_ms

        max_tokens: int | None | Unset
        if isinstance(self.max_tokens, Unset):
            max_tokens = UNSET
        else:
            max_tokens = self.max_tokens

        max_tool_calls: int | None | Unset
        if isinstance(self.max_tool_calls, Unset):
            max_tool_calls = UNSET
        else:
            max_tool_calls = self.max_tool_calls

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if max_cost_usd is not UNSET:
            field_dict["max_cost_usd"] = max_cost_usd
        if max_iterations is not UNSET:
            field_dict["max_iterations"] = max_iterations
        if max_running_ms is not UNSET:
            field_dict["max_running_ms"] = max_running_ms
        if max_tokens is not UNSET:
            field_dict["max_tokens"] = max_tokens
        if max_tool_calls is not UNSET:
            field_dict["max_tool_calls"] = max_tool_calls

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_max_cost_usd(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_cost_usd = _parse_max_cost_usd(d.pop("max_cost_usd", UNSET))

        max_iterations = d.pop("max_iterations", UNSET)

        max_running_ms = d.pop("max_running_ms", UNSET)

        def _parse_max_tokens(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_tokens = _parse_max_tokens(d.pop("max_tokens", UNSET))

        def _parse_max_tool_calls(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_tool_calls = _parse_max_tool_calls(d.pop("max_tool_calls", UNSET))

        budgets = cls(
            max_cost_usd=max_cost_usd,
            max_iterations=max_iterations,
            max_running_ms=max_running_ms,
            max_tokens=max_tokens,
            max_tool_calls=max_tool_calls,
        )

        return budgets
