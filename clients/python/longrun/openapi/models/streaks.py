from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="Streaks")


@_attrs_define
class Streaks:
    """Consecutive-iteration counters behind the breakers.

    Attributes:
        error (int):
        no_progress (int):
        repeat (int):
        last_action_fingerprint (None | str | Unset):
        last_error_fingerprint (None | str | Unset):
        tool_failure (int | Unset): Consecutive iterations with a tool call refused before it ran (unknown tool, bad
            arguments) and not repaired. Default: 0.
    """

    error: int
    no_progress: int
    repeat: int
    last_action_fingerprint: None | str | Unset = UNSET
    last_error_fingerprint: None | str | Unset = UNSET
    tool_failure: int | Unset = 0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        error = self.error

        no_progress = self.no_progress

        repeat = self.repeat

        last_action_fingerprint: None | str | Unset
        if isinstance(self.last_action_fingerprint, Unset):
            last_action_fingerprint = UNSET
        else:
            last_action_fingerprint = self.last_action_fingerprint

        last_error_fingerprint: None | str | Unset
        if isinstance(self.last_error_fingerprint, Unset):
            last_error_fingerprint = UNSET
        else:
            last_error_fingerprint = self.last_error_fingerprint

        tool_failure = self.tool_failure

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "error": error,
                "no_progress": no_progress,
                "repeat": repeat,
            }
        )
        if last_action_fingerprint is not UNSET:
            field_dict["last_action_fingerprint"] = last_action_fingerprint
        if last_error_fingerprint is not UNSET:
            field_dict["last_error_fingerprint"] = last_error_fingerprint
        if tool_failure is not UNSET:
            field_dict["tool_failure"] = tool_failure

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        error = d.pop("error")

        no_progress = d.pop("no_progress")

        repeat = d.pop("repeat")

        def _parse_last_action_fingerprint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_action_fingerprint = _parse_last_action_fingerprint(
            d.pop("last_action_fingerprint", UNSET)
        )

        def _parse_last_error_fingerprint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_error_fingerprint = _parse_last_error_fingerprint(
            d.pop("last_error_fingerprint", UNSET)
        )

        tool_failure = d.pop("tool_failure", UNSET)

        streaks = cls(
            error=error,
            no_progress=no_progress,
            repeat=repeat,
            last_action_fingerprint=last_action_fingerprint,
            last_error_fingerprint=last_error_fingerprint,
            tool_failure=tool_failure,
        )

        streaks.additional_properties = d
        return streaks

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
