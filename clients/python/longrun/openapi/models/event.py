from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.event_kind import EventKind

T = TypeVar("T", bound="Event")


@_attrs_define
class Event:
    """One entry of a run's gapless event log: seqs are 1, 2, 3, … with no holes.

    Attributes:
        at (int):
        payload (Any):
        run_id (str):
        seq (int):
        type_ (EventKind): `iteration_deferred`: A claimed iteration was given back unfinished, to be tried again later.

            `waiting_for_capacity`: A model call waited for the model's shared capacity (per-model limits) before it was
            made; the wait is not running time.

            `criteria_checked`: A completion claim's criteria were checked: each one's verdict, and whether the claim was
            accepted.

            `message_posted`: The user posted a message to the run; the next planner prompt carries it.

            `follow_up_asked`: An ended run was asked a follow-up question; the payload sums up the report it supersedes.

            `child_wait_timed_out`: A run's wait for its children timed out; it goes on without those still running.
    """

    at: int
    payload: Any
    run_id: str
    seq: int
    type_: EventKind
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at

        payload = self.payload

        run_id = self.run_id

        seq = self.seq

        type_ = self.type_.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "payload": payload,
                "run_id": run_id,
                "seq": seq,
                "type": type_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        at = d.pop("at")

        payload = d.pop("payload")

        run_id = d.pop("run_id")

        seq = d.pop("seq")

        type_ = EventKind(d.pop("type"))

        event = cls(
            at=at,
            payload=payload,
            run_id=run_id,
            seq=seq,
            type_=type_,
        )

        event.additional_properties = d
        return event

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
