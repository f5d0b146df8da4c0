from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.run_status import RunStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.budgets import Budgets


T = TypeVar("T", bound="ChildRun")


@_attrs_define
class ChildRun:
    """A child run as its parent sees it.

    Attributes:
        budgets (Budgets): Hard limits of a run. Waiting time never counts against `max_running_ms`.
        id (str):
        objective (str):
        status (RunStatus): `paused`: Held by the user between iterations; `continue` queues it again.
        cost_usd (float | Unset):  Default: 0.0.
        detached (bool | Unset): Fire-and-forget (`spawn_run` with `detached`): the parent neither waits for it nor
            takes it down when it ends; it runs on its own budgets, still listed here (and counted
            against the parent's children and depth limits), and reports its end here. Default: False.
        summary (None | str | Unset): The child's report summary, once it ended.
        tokens (int | Unset):  Default: 0.
    """

    budgets: Budgets
    id: str
    objective: str
    status: RunStatus
    cost_usd: float | Unset = 0.0
    detached: bool | Unset = False
    summary: None | str | Unset = UNSET
    tokens: int | Unset = 0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        budgets = self.budgets.to_dict()

        id = self.id

        objective = self.objective

        status = self.status.value

        cost_usd = self.cost_usd

        detached = self.detached

        summary: None | str | Unset
        if isinstance(self.summary, Unset):
            summary = UNSET
        else:
            summary = self.summary

        tokens = self.tokens

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "budgets": budgets,
                "id": id,
                "objective": objective,
                "status": status,
            }
        )
        if cost_usd is not UNSET:
            field_dict["cost_usd"] = cost_usd
        if detached is not UNSET:
            field_dict["detached"] = detached
        if summary is not UNSET:
            field_dict["summary"] = summary
        if tokens is not UNSET:
            field_dict["tokens"] = tokens

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.budgets import Budgets

        d = dict(src_dict)
        budgets = Budgets.from_dict(d.pop("budgets"))

        id = d.pop("id")

        objective = d.pop("objective")

        status = RunStatus(d.pop("status"))

        cost_usd = d.pop("cost_usd", UNSET)

        detached = d.pop("detached", UNSET)

        def _parse_summary(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        summary = _parse_summary(d.pop("summary", UNSET))

        tokens = d.pop("tokens", UNSET)

        child_run = cls(
            budgets=budgets,
            id=id,
            objective=objective,
            status=status,
            cost_usd=cost_usd,
            detached=detached,
            summary=summary,
            tokens=tokens,
        )

        child_run.additional_properties = d
        return child_run

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
