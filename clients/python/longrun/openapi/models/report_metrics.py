from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.report_metrics_by_model import ReportMetricsByModel


T = TypeVar("T", bound="ReportMetrics")


@_attrs_define
class ReportMetrics:
    """
    Attributes:
        by_model (ReportMetricsByModel):
        duration_ms (int):
        input_tokens (int):
        iterations (int):
        llm_calls (int):
        output_tokens (int):
        running_ms (int):
        total_cost_usd (float):
        total_tokens (int): Input and output tokens of every model call the run made.
        unpriced_calls (int):
    """

    by_model: ReportMetricsByModel
    duration_ms: int
    input_tokens: int
    iterations: int
    llm_calls: int
    output_tokens: int
    running_ms: int
    total_cost_usd: float
    total_tokens: int
    unpriced_calls: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        by_model = self.by_model.to_dict()

        duration_ms = self.duration_ms

        input_tokens = self.input_tokens

        iterations = self.iterations

        llm_calls = self.llm_calls

        output_tokens = self.output_tokens

        running_ms = self.running_ms

        total_cost_usd = self.total_cost_usd

        total_tokens = self.total_tokens

        unpriced_calls = self.unpriced_calls

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "by_model": by_model,
                "duration_ms": duration_ms,
                "input_tokens": input_tokens,
                "iterations": iterations,
                "llm_calls": llm_calls,
                "output_tokens": output_tokens,
                "running_ms": running_ms,
                "total_cost_usd": total_cost_usd,
                "total_tokens": total_tokens,
                "unpriced_calls": unpriced_calls,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.report_metrics_by_model import ReportMetricsByModel

        d = dict(src_dict)
        by_model = ReportMetricsByModel.from_dict(d.pop("by_model"))

        duration_ms = d.pop("duration_ms")

        input_tokens = d.pop("input_tokens")

        iterations = d.pop("iterations")

        llm_calls = d.pop("llm_calls")

        output_tokens = d.pop("output_tokens")

        running_ms = d.pop("running_ms")

        total_cost_usd = d.pop("total_cost_usd")

        total_tokens = d.pop("total_tokens")

        unpriced_calls = d.pop("unpriced_calls")

        report_metrics = cls(
            by_model=by_model,
            duration_ms=duration_ms,
            input_tokens=input_tokens,
            iterations=iterations,
            llm_calls=llm_calls,
            output_tokens=output_tokens,
            running_ms=running_ms,
            total_cost_usd=total_cost_usd,
            total_tokens=total_tokens,
            unpriced_calls=unpriced_calls,
        )

        report_metrics.additional_properties = d
        return report_metrics

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
