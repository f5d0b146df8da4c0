from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.narrative_source import NarrativeSource
from ..models.run_status import RunStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.artifacts import Artifacts
    from ..models.child_run import ChildRun
    from ..models.criterion_verdict import CriterionVerdict
    from ..models.report_metrics import ReportMetrics
    from ..models.source_ref import SourceRef
    from ..models.stopping_reason import StoppingReason
    from ..models.what_changed import WhatChanged


T = TypeVar("T", bound="Report")


@_attrs_define
class Report:
    """The report a run writes when it ends or waits (ARCHITECTURE.md, "Outcome"). Read through
    `stored`, which also reads the shapes older versions stored.

        Attributes:
            artifacts (Artifacts): The run's outputs: its documents, and its plans with their status.
            generated_at (int):
            headline (str): The last iteration's one-line progress summary.
            metrics (ReportMetrics):
            objective (str):
            run_id (str):
            sources (list[SourceRef]): Every source the workspace cites, in the order first cited (by doc path).
            status (RunStatus): `paused`: Held by the user between iterations; `continue` queues it again.
            stopping_reason (StoppingReason):
            summary (str): Five to ten sentences on what was asked, done, found and left.
            summary_source (NarrativeSource): Who wrote the narrative summary.

                `model`: One final model call at the end of the run, priced and counted in its spend.

                `records`: Built from the iteration records, without a model; `note` says why.
            title (str): A short title of the work with its outcome: `Complete: Tea field guide`.
            what_changed (WhatChanged): What the run changed, from its committed workspace and plan. Each thing is listed
                once:
                in `created`, or in `updated` once it was written again (a document) or moved past pending
                (a plan step).
            children (list[ChildRun] | Unset): Child runs and their outcomes.
            criteria (list[CriterionVerdict] | Unset): The verdict on each of the run's completion criteria at the
                completion claim the
                iteration that ended the run made: empty when it made none or the run has none.
            questions (list[str] | Unset):
            summary_note (None | str | Unset): Why no model wrote `summary` (records only).
    """

    artifacts: Artifacts
    generated_at: int
    headline: str
    metrics: ReportMetrics
    objective: str
    run_id: str
    sources: list[SourceRef]
    status: RunStatus
    stopping_reason: StoppingReason
    summary: str
    summary_source: NarrativeSource
    title: str
    what_changed: WhatChanged
    children: list[ChildRun] | Unset = UNSET
    criteria: list[CriterionVerdict] | Unset = UNSET
    questions: list[str] | Unset = UNSET
    summary_note: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        artifacts = self.artifacts.to_dict()

        generated_at = self.generated_at

        headline = self.headline

        metrics = self.metrics.to_dict()

        objective = self.objective

        run_id = self.run_id

        sources = []
        for sources_item_data in self.sources:
            sources_item = sources_item_data.to_dict()
            sources.append(sources_item)

        status = self.status.value

        stopping_reason = self.stopping_reason.to_dict()

        summary = self.summary

        summary_source = self.summary_source.value

        title = self.title

        what_changed = self.what_changed.to_dict()

        children: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.children, Unset):
            children = []
            for children_item_data in self.children:
                children_item = children_item_data.to_dict()
                children.append(children_item)

        criteria: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.criteria, Unset):
            criteria = []
            for criteria_item_data in self.criteria:
                criteria_item = criteria_item_data.to_dict()
                criteria.append(criteria_item)

        questions: list[str] | Unset = UNSET
        if not isinstance(self.questions, Unset):
            questions = self.questions

        summary_note: None | str | Unset
        if isinstance(self.summary_note, Unset):
            summary_note = UNSET
        else:
            summary_note = self.summary_note

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "artifacts": artifacts,
                "generated_at": generated_at,
                "headline": headline,
                "metrics": metrics,
                "objective": objective,
                "run_id": run_id,
                "sources": sources,
                "status": status,
                "stopping_reason": stopping_reason,
                "summary": summary,
                "summary_source": summary_source,
                "title": title,
                "what_changed": what_changed,
            }
        )
        if children is not UNSET:
            field_dict["children"] = children
        if criteria is not UNSET:
            field_dict["criteria"] = criteria
        if questions is not UNSET:
            field_dict["questions"] = questions
        if summary_note is not UNSET:
            field_dict["summary_note"] = summary_note

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.artifacts import Artifacts
        from ..models.child_run import ChildRun
        from ..models.criterion_verdict import CriterionVerdict
        from ..models.report_metrics import ReportMetrics
        from ..models.source_ref import SourceRef
        from ..models.stopping_reason import StoppingReason
        from ..models.what_changed import WhatChanged

        d = dict(src_dict)
        artifacts = Artifacts.from_dict(d.pop("artifacts"))

        generated_at = d.pop("generated_at")

        headline = d.pop("headline")

        metrics = ReportMetrics.from_dict(d.pop("metrics"))

        objective = d.pop("objective")

        run_id = d.pop("run_id")

        sources = []
        _sources = d.pop("sources")
        for sources_item_data in _sources:
            sources_item = SourceRef.from_dict(sources_item_data)

            sources.append(sources_item)

        status = RunStatus(d.pop("status"))

        stopping_reason = StoppingReason.from_dict(d.pop("stopping_reason"))

        summary = d.pop("summary")

        summary_source = NarrativeSource(d.pop("summary_source"))

        title = d.pop("title")

        what_changed = WhatChanged.from_dict(d.pop("what_changed"))

        _children = d.pop("children", UNSET)
        children: list[ChildRun] | Unset = UNSET
        if _children is not UNSET:
            children = []
            for children_item_data in _children:
                children_item = ChildRun.from_dict(children_item_data)

                children.append(children_item)

        _criteria = d.pop("criteria", UNSET)
        criteria: list[CriterionVerdict] | Unset = UNSET
        if _criteria is not UNSET:
            criteria = []
            for criteria_item_data in _criteria:
                criteria_item = CriterionVerdict.from_dict(criteria_item_data)

                criteria.append(criteria_item)

        questions = cast(list[str], d.pop("questions", UNSET))

        def _parse_summary_note(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        summary_note = _parse_summary_note(d.pop("summary_note", UNSET))

        report = cls(
            artifacts=artifacts,
            generated_at=generated_at,
            headline=headline,
            metrics=metrics,
            objective=objective,
            run_id=run_id,
            sources=sources,
            status=status,
            stopping_reason=stopping_reason,
            summary=summary,
            summary_source=summary_source,
            title=title,
            what_changed=what_changed,
            children=children,
            criteria=criteria,
            questions=questions,
            summary_note=summary_note,
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
