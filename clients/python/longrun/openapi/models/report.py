from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.run_status import RunStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.artifacts import Artifacts
    from ..models.child_run import ChildRun
    from ..models.narrative import Narrative
    from ..models.report_metrics import ReportMetrics
    from ..models.source_ref import SourceRef
    from ..models.stopping_reason import StoppingReason
    from ..models.what_changed import WhatChanged


T = TypeVar("T", bound="Report")


@_attrs_define
class Report:
    """
    Attributes:
        artifacts (Artifacts): The run's outputs: its documents, and its plan as it stands.
        generated_at (int):
        metrics (ReportMetrics):
        objective (str):
        run_id (str):
        status (RunStatus): `paused`: Held by the user between iterations; `continue` queues it again.
        stopping_reason (StoppingReason):
        summary (str): The last iteration's one-line progress summary.
        title (str):
        what_changed (WhatChanged):
        children (list[ChildRun] | Unset): Child runs and their outcomes.
        narrative (Narrative | Unset): The report's narrative: what was asked, what was done, what was found, what is
            left.
        questions (list[str] | Unset):
        sources (list[SourceRef] | Unset): Every source the workspace cites, in the order first cited (by doc path).
    """

    artifacts: Artifacts
    generated_at: int
    metrics: ReportMetrics
    objective: str
    run_id: str
    status: RunStatus
    stopping_reason: StoppingReason
    summary: str
    title: str
    what_changed: WhatChanged
    children: list[ChildRun] | Unset = UNSET
    narrative: Narrative | Unset = UNSET
    questions: list[str] | Unset = UNSET
    sources: list[SourceRef] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        artifacts = self.artifacts.to_dict()

        generated_at = self.generated_at

        metrics = self.metrics.to_dict()

        objective = self.objective

        run_id = self.run_id

        status = self.status.value

        stopping_reason = self.stopping_reason.to_dict()

        summary = self.summary

        title = self.title

        what_changed = self.what_changed.to_dict()

        children: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.children, Unset):
            children = []
            for children_item_data in self.children:
                children_item = children_item_data.to_dict()
                children.append(children_item)

        narrative: dict[str, Any] | Unset = UNSET
        if not isinstance(self.narrative, Unset):
            narrative = self.narrative.to_dict()

        questions: list[str] | Unset = UNSET
        if not isinstance(self.questions, Unset):
            questions = self.questions

        sources: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.sources, Unset):
            sources = []
            for sources_item_data in self.sources:
                sources_item = sources_item_data.to_dict()
                sources.append(sources_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "artifacts": artifacts,
                "generated_at": generated_at,
                "metrics": metrics,
                "objective": objective,
                "run_id": run_id,
                "status": status,
                "stopping_reason": stopping_reason,
                "summary": summary,
                "title": title,
                "what_changed": what_changed,
            }
        )
        if children is not UNSET:
            field_dict["children"] = children
        if narrative is not UNSET:
            field_dict["narrative"] = narrative
        if questions is not UNSET:
            field_dict["questions"] = questions
        if sources is not UNSET:
            field_dict["sources"] = sources

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.artifacts import Artifacts
        from ..models.child_run import ChildRun
        from ..models.narrative import Narrative
        from ..models.report_metrics import ReportMetrics
        from ..models.source_ref import SourceRef
        from ..models.stopping_reason import StoppingReason
        from ..models.what_changed import WhatChanged

        d = dict(src_dict)
        artifacts = Artifacts.from_dict(d.pop("artifacts"))

        generated_at = d.pop("generated_at")

        metrics = ReportMetrics.from_dict(d.pop("metrics"))

        objective = d.pop("objective")

        run_id = d.pop("run_id")

        status = RunStatus(d.pop("status"))

        stopping_reason = StoppingReason.from_dict(d.pop("stopping_reason"))

        summary = d.pop("summary")

        title = d.pop("title")

        what_changed = WhatChanged.from_dict(d.pop("what_changed"))

        _children = d.pop("children", UNSET)
        children: list[ChildRun] | Unset = UNSET
        if _children is not UNSET:
            children = []
            for children_item_data in _children:
                children_item = ChildRun.from_dict(children_item_data)

                children.append(children_item)

        _narrative = d.pop("narrative", UNSET)
        narrative: Narrative | Unset
        if isinstance(_narrative, Unset):
            narrative = UNSET
        else:
            narrative = Narrative.from_dict(_narrative)

        questions = cast(list[str], d.pop("questions", UNSET))

        _sources = d.pop("sources", UNSET)
        sources: list[SourceRef] | Unset = UNSET
        if _sources is not UNSET:
            sources = []
            for sources_item_data in _sources:
                sources_item = SourceRef.from_dict(sources_item_data)

                sources.append(sources_item)

        report = cls(
            artifacts=artifacts,
            generated_at=generated_at,
            metrics=metrics,
            objective=objective,
            run_id=run_id,
            status=status,
            stopping_reason=stopping_reason,
            summary=summary,
            title=title,
            what_changed=what_changed,
            children=children,
            narrative=narrative,
            questions=questions,
            sources=sources,
        )

        report.additional_properties = d
        return report

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
