from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.budgets_input import BudgetsInput


T = TypeVar("T", bound="FollowUpBody")


@_attrs_define
class FollowUpBody:
    """A follow-up question to an ended run (completed, stopped or failed): the run is queued
    again and its planner answers the question. It runs on the budgets the run has left;
    `budgets` raises them (needed when none is left).

        Attributes:
            question (str):
            budgets (BudgetsInput | Unset): Budget values as a user may send them: every field optional, negatives rejected
                by validation
                (not by the type) so the error can name the field and the value.
    """

    question: str
    budgets: BudgetsInput | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        question = self.question

        budgets: dict[str, Any] | Unset = UNSET
        if not isinstance(self.budgets, Unset):
            budgets = self.budgets.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "question": question,
            }
        )
        if budgets is not UNSET:
            field_dict["budgets"] = budgets

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.budgets_input import BudgetsInput

        d = dict(src_dict)
        question = d.pop("question")

        _budgets = d.pop("budgets", UNSET)
        budgets: BudgetsInput | Unset
        if isinstance(_budgets, Unset):
            budgets = UNSET
        else:
            budgets = BudgetsInput.from_dict(_budgets)

        follow_up_body = cls(
            question=question,
            budgets=budgets,
        )

        return follow_up_body
