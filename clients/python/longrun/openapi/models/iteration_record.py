from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.run_status import RunStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.criterion_verdict import CriterionVerdict
    from ..models.executor_brief import ExecutorBrief
    from ..models.iteration_metrics import IterationMetrics
    from ..models.status_block import StatusBlock
    from ..models.stopping_reason import StoppingReason
    from ..models.tool_result_brief import ToolResultBrief


T = TypeVar("T", bound="IterationRecord")


@_attrs_define
class IterationRecord:
    """
    Attributes:
        committed_at (int):
        created_docs (list[str]):
        executor_results (list[ExecutorBrief]):
        hints (list[str]):
        metrics (IterationMetrics):
        n (int):
        outcome (RunStatus): `paused`: Held by the user between iterations; `continue` queues it again.
        progress (bool):
        run_id (str):
        started_at (int):
        summary (str):
        tool_results (list[ToolResultBrief]):
        updated_docs (list[str]):
        criteria (list[CriterionVerdict] | Unset): The verdicts on the run's criteria, when this iteration claimed
            completion.
        error (Any | Unset):
        status_block (None | StatusBlock | Unset):
        stopping_reason (None | StoppingReason | Unset):
    """

    committed_at: int
    created_docs: list[str]
    executor_results: list[ExecutorBrief]
    hints: list[str]
    metrics: IterationMetrics
    n: int
    outcome: RunStatus
    progress: bool
    run_id: str
    started_at: int
    summary: str
    tool_results: list[ToolResultBrief]
    updated_docs: list[str]
    criteria: list[CriterionVerdict] | Unset = UNSET
    error: Any | Unset = UNSET
    status_block: None | StatusBlock | Unset = UNSET
    stopping_reason: None | StoppingReason | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.status_block import StatusBlock
        from ..models.stopping_reason import StoppingReason

        committed_at = self.committed_at

        created_docs = self.created_docs

        executor_results = []
        for executor_results_item_data in self.executor_results:
            executor_results_item = executor_results_item_data.to_dict()
            executor_results.append(executor_results_item)

        hints = self.hints

        metrics = self.metrics.to_dict()

        n = self.n

        outcome = self.outcome.value

        progress = self.progress

        run_id = self.run_id

        started_at = self.started_at

        summary = self.summary

        tool_results = []
        for tool_results_item_data in self.tool_results:
            tool_results_item = tool_results_item_data.to_dict()
            tool_results.append(tool_results_item)

        updated_docs = self.updated_docs

        criteria: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.criteria, Unset):
            criteria = []
            for criteria_item_data in self.criteria:
                criteria_item = criteria_item_data.to_dict()
                criteria.append(criteria_item)

        error = self.error

        status_block: dict[str, Any] | None | Unset
        if isinstance(self.status_block, Unset):
            status_block = UNSET
        elif isinstance(self.status_block, StatusBlock):
            status_block = self.status_block.to_dict()
        else:
            status_block = self.status_block

        stopping_reason: dict[str, Any] | None | Unset
        if isinstance(self.stopping_reason, Unset):
            stopping_reason = UNSET
        elif isinstance(self.stopping_reason, StoppingReason):
            stopping_reason = self.stopping_reason.to_dict()
        else:
            stopping_reason = self.stopping_reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "committed_at": committed_at,
                "created_docs": created_docs,
                "executor_results": executor_results,
                "hints": hints,
                "metrics": metrics,
                "n": n,
                "outcome": outcome,
                "progress": progress,
                "run_id": run_id,
                "started_at": started_at,
                "summary": summary,
                "tool_results": tool_results,
                "updated_docs": updated_docs,
            }
        )
        if criteria is not UNSET:
            field_dict["criteria"] = criteria
        if error is not UNSET:
            field_dict["error"] = error
        if status_block is not UNSET:
            field_dict["status_block"] = status_block
        if stopping_reason is not UNSET:
            field_dict["stopping_reason"] = stopping_reason

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.criterion_verdict import CriterionVerdict
        from ..models.executor_brief import ExecutorBrief
        from ..models.iteration_metrics import IterationMetrics
        from ..models.status_block import StatusBlock
        from ..models.stopping_reason import StoppingReason
        from ..models.tool_result_brief import ToolResultBrief

        d = dict(src_dict)
        committed_at = d.pop("committed_at")

        created_docs = cast(list[str], d.pop("created_docs"))

        executor_results = []
        _executor_results = d.pop("executor_results")
        for executor_results_item_data in _executor_results:
            executor_results_item = ExecutorBrief.from_dict(executor_results_item_data)

            executor_results.append(executor_results_item)

        hints = cast(list[str], d.pop("hints"))

        metrics = IterationMetrics.from_dict(d.pop("metrics"))

        n = d.pop("n")

        outcome = RunStatus(d.pop("outcome"))

        progress = d.pop("progress")

        run_id = d.pop("run_id")

        started_at = d.pop("started_at")

        summary = d.pop("summary")

        tool_results = []
        _tool_results = d.pop("tool_results")
        for tool_results_item_data in _tool_results:
            tool_results_item = ToolResultBrief.from_dict(tool_results_item_data)

            tool_results.append(tool_results_item)

        updated_docs = cast(list[str], d.pop("updated_docs"))

        _criteria = d.pop("criteria", UNSET)
        criteria: list[CriterionVerdict] | Unset = UNSET
        if _criteria is not UNSET:
            criteria = []
            for criteria_item_data in _criteria:
                criteria_item = CriterionVerdict.from_dict(criteria_item_data)

                criteria.append(criteria_item)

        error = d.pop("error", UNSET)

        def _parse_status_block(data: object) -> None | StatusBlock | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                status_block_type_0 = StatusBlock.from_dict(data)

                return status_block_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StatusBlock | Unset, data)

        status_block = _parse_status_block(d.pop("status_block", UNSET))

        def _parse_stopping_reason(data: object) -> None | StoppingReason | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                stopping_reason_type_0 = StoppingReason.from_dict(data)

                return stopping_reason_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StoppingReason | Unset, data)

        stopping_reason = _parse_stopping_reason(d.pop("stopping_reason", UNSET))

        iteration_record = cls(
            committed_at=committed_at,
            created_docs=created_docs,
            executor_results=executor_results,
            hints=hints,
            metrics=metrics,
            n=n,
            outcome=outcome,
            progress=progress,
            run_id=run_id,
            started_at=started_at,
            summary=summary,
            tool_results=tool_results,
            updated_docs=updated_docs,
            criteria=criteria,
            error=error,
            status_block=status_block,
            stopping_reason=stopping_reason,
        )

        iteration_record.additional_properties = d
        return iteration_record

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
