from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="BusMessage")


@_attrs_define
class BusMessage:
    """
    Attributes:
        at (str): RFC 3339.
        body (str):
        run_id (str): The agent process that posted it; empty for the loop's and the user's messages.
        seq (int):
        type_ (str): INFO, OBSERVATION, QUESTION, ANSWER, FACT, WARNING, CHILD_DONE, START, STOP, CRASH,
            SUPERVISOR_RESTART or USER.
    """

    at: str
    body: str
    run_id: str
    seq: int
    type_: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at

        body = self.body

        run_id = self.run_id

        seq = self.seq

        type_ = self.type_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "body": body,
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

        body = d.pop("body")

        run_id = d.pop("run_id")

        seq = d.pop("seq")

        type_ = d.pop("type")

        bus_message = cls(
            at=at,
            body=body,
            run_id=run_id,
            seq=seq,
            type_=type_,
        )

        bus_message.additional_properties = d
        return bus_message

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
