from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.run_status import RunStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.run_context import RunContext
    from ..models.stopping_reason import StoppingReason


T = TypeVar("T", bound="RunSummary")


@_attrs_define
class RunSummary:
    """One run in a listing (the objective cut to 200 characters)

    Attributes:
        cost_usd (float):
        created_at (int):
        id (str):
        iteration (int):
        link (str): The run's page in the console
        objective (str):
        status (RunStatus): `paused`: Held by the user between iterations; `continue` queues it again.
        stopping_reason (None | StoppingReason):
        tokens (int):
        updated_at (int):
        context (None | RunContext | Unset):
        parent_run_id (None | str | Unset): The run that spawned this one, for a child run
    """

    cost_usd: float
    created_at: int
    id: str
    iteration: int
    link: str
    objective: str
    status: RunStatus
    stopping_reason: None | StoppingReason
    tokens: int
    updated_at: int
    context: None | RunContext | Unset = UNSET
    parent_run_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.run_context import RunContext
        from ..models.stopping_reason import StoppingReason

        cost_usd = self.cost_usd

        created_at = self.created_at

        id = self.id

        iteration = self.iteration

        link = self.link

        objective = self.objective

        status = self.status.value

        stopping_reason: dict[str, Any] | None
        if isinstance(self.stopping_reason, StoppingReason):
            stopping_reason = self.stopping_reason.to_dict()
        else:
            stopping_reason = self.stopping_reason

        tokens = self.tokens

        updated_at = self.updated_at

        context: dict[str, Any] | None | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        elif isinstance(self.context, RunContext):
            context = self.context.to_dict()
        else:
            context = self.context

        parent_run_id: None | str | Unset
        if isinstance(self.parent_run_id, Unset):
            parent_run_id = UNSET
        else:
            parent_run_id = self.parent_run_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cost_usd": cost_usd,
                "created_at": created_at,
                "id": id,
                "iteration": iteration,
                "link": link,
                "objective": objective,
                "status": status,
                "stopping_reason": stopping_reason,
                "tokens": tokens,
                "updated_at": updated_at,
            }
        )
        if context is not UNSET:
            field_dict["context"] = context
        if parent_run_id is not UNSET:
            field_dict["parent_run_id"] = parent_run_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.run_context import RunContext
        from ..models.stopping_reason import StoppingReason

        d = dict(src_dict)
        cost_usd = d.pop("cost_usd")

        created_at = d.pop("created_at")

        id = d.pop("id")

        iteration = d.pop("iteration")

        link = d.pop("link")

        objective = d.pop("objective")

        status = RunStatus(d.pop("status"))

        def _parse_stopping_reason(data: object) -> None | StoppingReason:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                stopping_reason_type_0 = StoppingReason.from_dict(data)

                return stopping_reason_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StoppingReason, data)

        stopping_reason = _parse_stopping_reason(d.pop("stopping_reason"))

        tokens = d.pop("tokens")

        updated_at = d.pop("updated_at")

        def _parse_context(data: object) -> None | RunContext | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                context_type_0 = RunContext.from_dict(data)

                return context_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunContext | Unset, data)

        context = _parse_context(d.pop("context", UNSET))

        def _parse_parent_run_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        parent_run_id = _parse_parent_run_id(d.pop("parent_run_id", UNSET))

        run_summary = cls(
            cost_usd=cost_usd,
            created_at=created_at,
            id=id,
            iteration=iteration,
            link=link,
            objective=objective,
            status=status,
            stopping_reason=stopping_reason,
            tokens=tokens,
            updated_at=updated_at,
            context=context,
            parent_run_id=parent_run_id,
        )

        run_summary.additional_properties = d
        return run_summary

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
