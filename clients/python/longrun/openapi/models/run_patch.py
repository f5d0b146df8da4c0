from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.plan_step_edit import PlanStepEdit


T = TypeVar("T", bound="RunPatch")


@_attrs_define
class RunPatch:
    """A user's mid-run edit (`PATCH /v1/runs/{id}`): a new objective, and plan steps to add or
    change by id.

        Attributes:
            objective (None | str | Unset):
            plan (list[PlanStepEdit] | Unset):
    """

    objective: None | str | Unset = UNSET
    plan: list[PlanStepEdit] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        objective: None | str | Unset
        if isinstance(self.objective, Unset):
            objective = UNSET
        else:
            objective = self.objective

        plan: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.plan, Unset):
            plan = []
            for plan_item_data in self.plan:
                plan_item = plan_item_data.to_dict()
                plan.append(plan_item)

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if objective is not UNSET:
            field_dict["objective"] = objective
        if plan is not UNSET:
            field_dict["plan"] = plan

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.plan_step_edit import PlanStepEdit

        d = dict(src_dict)

        def _parse_objective(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        objective = _parse_objective(d.pop("objective", UNSET))

        _plan = d.pop("plan", UNSET)
        plan: list[PlanStepEdit] | Unset = UNSET
        if _plan is not UNSET:
            plan = []
            for plan_item_data in _plan:
                plan_item = PlanStepEdit.from_dict(plan_item_data)

                plan.append(plan_item)

        run_patch = cls(
            objective=objective,
            plan=plan,
        )

        return run_patch
