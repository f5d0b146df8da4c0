from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.confidence import Confidence
from ..models.next_action import NextAction
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.criterion_evidence import CriterionEvidence


T = TypeVar("T", bound="StatusBlock")


@_attrs_define
class StatusBlock:
    """
    Attributes:
        exit_signal (bool):
        needs_user_input (bool):
        progress_summary (str):
        blocking_questions (list[str] | Unset):
        completion_evidence (list[str] | Unset): What proves the objective met: each item names workspace documents by
            path or plan
            steps as `plan:ID`. A claim is accepted only when every one it names exists in this
            run, documents are non-empty and were written by this run, and plan steps are done.
        confidence (Confidence | None | Unset):
        criteria_evidence (list[CriterionEvidence] | Unset): Each of the run's `completion_criteria` mapped to its
            evidence; required for every
            criterion when the run has any.
        next_action_hint (NextAction | None | Unset):
        remaining_work (list[str] | Unset):
    """

    exit_signal: bool
    needs_user_input: bool
    progress_summary: str
    blocking_questions: list[str] | Unset = UNSET
    completion_evidence: list[str] | Unset = UNSET
    confidence: Confidence | None | Unset = UNSET
    criteria_evidence: list[CriterionEvidence] | Unset = UNSET
    next_action_hint: NextAction | None | Unset = UNSET
    remaining_work: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        exit_signal = self.exit_signal

        needs_user_input = self.needs_user_input

        progress_summary = self.progress_summary

        blocking_questions: list[str] | Unset = UNSET
        if not isinstance(self.blocking_questions, Unset):
            blocking_questions = self.blocking_questions

        completion_evidence: list[str] | Unset = UNSET
        if not isinstance(self.completion_evidence, Unset):
            completion_evidence = self.completion_evidence

        confidence: None | str | Unset
        if isinstance(self.confidence, Unset):
            confidence = UNSET
        elif isinstance(self.confidence, Confidence):
            confidence = self.confidence.value
        else:
            confidence = self.confidence

        criteria_evidence: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.criteria_evidence, Unset):
            criteria_evidence = []
            for criteria_evidence_item_data in self.criteria_evidence:
                criteria_evidence_item = criteria_evidence_item_data.to_dict()
                criteria_evidence.append(criteria_evidence_item)

        next_action_hint: None | str | Unset
        if isinstance(self.next_action_hint, Unset):
            next_action_hint = UNSET
        elif isinstance(self.next_action_hint, NextAction):
            next_action_hint = self.next_action_hint.value
        else:
            next_action_hint = self.next_action_hint

        remaining_work: list[str] | Unset = UNSET
        if not isinstance(self.remaining_work, Unset):
            remaining_work = self.remaining_work

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "exit_signal": exit_signal,
                "needs_user_input": needs_user_input,
                "progress_summary": progress_summary,
            }
        )
        if blocking_questions is not UNSET:
            field_dict["blocking_questions"] = blocking_questions
        if completion_evidence is not UNSET:
            field_dict["completion_evidence"] = completion_evidence
        if confidence is not UNSET:
            field_dict["confidence"] = confidence
        if criteria_evidence is not UNSET:
            field_dict["criteria_evidence"] = criteria_evidence
        if next_action_hint is not UNSET:
            field_dict["next_action_hint"] = next_action_hint
        if remaining_work is not UNSET:
            field_dict["remaining_work"] = remaining_work

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.criterion_evidence import CriterionEvidence

        d = dict(src_dict)
        exit_signal = d.pop("exit_signal")

        needs_user_input = d.pop("needs_user_input")

        progress_summary = d.pop("progress_summary")

        blocking_questions = cast(list[str], d.pop("blocking_questions", UNSET))

        completion_evidence = cast(list[str], d.pop("completion_evidence", UNSET))

        def _parse_confidence(data: object) -> Confidence | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                confidence_type_0 = Confidence(data)

                return confidence_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Confidence | None | Unset, data)

        confidence = _parse_confidence(d.pop("confidence", UNSET))

        _criteria_evidence = d.pop("criteria_evidence", UNSET)
        criteria_evidence: list[CriterionEvidence] | Unset = UNSET
        if _criteria_evidence is not UNSET:
            criteria_evidence = []
            for criteria_evidence_item_data in _criteria_evidence:
                criteria_evidence_item = CriterionEvidence.from_dict(
                    criteria_evidence_item_data
                )

                criteria_evidence.append(criteria_evidence_item)

        def _parse_next_action_hint(data: object) -> NextAction | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_action_hint_type_0 = NextAction(data)

                return next_action_hint_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(NextAction | None | Unset, data)

        next_action_hint = _parse_next_action_hint(d.pop("next_action_hint", UNSET))

        remaining_work = cast(list[str], d.pop("remaining_work", UNSET))

        status_block = cls(
            exit_signal=exit_signal,
            needs_user_input=needs_user_input,
            progress_summary=progress_summary,
            blocking_questions=blocking_questions,
            completion_evidence=completion_evidence,
            confidence=confidence,
            criteria_evidence=criteria_evidence,
            next_action_hint=next_action_hint,
            remaining_work=remaining_work,
        )

        status_block.additional_properties = d
        return status_block

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
