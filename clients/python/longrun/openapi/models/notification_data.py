from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.run_status import RunStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.stopping_reason import StoppingReason


T = TypeVar("T", bound="NotificationData")


@_attrs_define
class NotificationData:
    """The run an outcome is about, its status, why it stopped and what it spent.

    Attributes:
        cost_usd (float):
        duration_ms (int):
        iterations (int):
        run_id (str):
        status (RunStatus): `paused`: Held by the user between iterations; `continue` queues it again.
        tokens (int):
        stopping_reason (None | StoppingReason | Unset):
    """

    cost_usd: float
    duration_ms: int
    iterations: int
    run_id: str
    status: RunStatus
    tokens: int
    stopping_reason: None | StoppingReason | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.stopping_reason import StoppingReason

        cost_usd = self.cost_usd

        duration_ms = self.duration_ms

        iterations = self.iterations

        run_id = self.run_id

        status = self.status.value

        tokens = self.tokens

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
                "cost_usd": cost_usd,
                "duration_ms": duration_ms,
                "iterations": iterations,
                "run_id": run_id,
                "status": status,
                "tokens": tokens,
            }
        )
        if stopping_reason is not UNSET:
            field_dict["stopping_reason"] = stopping_reason

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.stopping_reason import StoppingReason

        d = dict(src_dict)
        cost_usd = d.pop("cost_usd")

        duration_ms = d.pop("duration_ms")

        iterations = d.pop("iterations")

        run_id = d.pop("run_id")

        status = RunStatus(d.pop("status"))

        tokens = d.pop("tokens")

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

        notification_data = cls(
            cost_usd=cost_usd,
            duration_ms=duration_ms,
            iterations=iterations,
            run_id=run_id,
            status=status,
            tokens=tokens,
            stopping_reason=stopping_reason,
        )

        notification_data.additional_properties = d
        return notification_data

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
