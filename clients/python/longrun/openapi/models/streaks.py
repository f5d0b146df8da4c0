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
    """The breakers' memory: consecutive-iteration counters, and what the last iterations did and
    left, all bounded.

        Attributes:
            error (int):
            no_progress (int):
            repeat (int):
            docs_hash (str | Unset): The workspace's documents as one hash (`progress::doc_part`, hex), brought up to date
                by
                each commit from what it wrote.
            history (list[str] | Unset): The last iterations in a line each, newest last: the planner's recent history
                beside
                the scratchpad entries it is shown.
            last_action_fingerprint (None | str | Unset):
            last_error_fingerprint (None | str | Unset):
            last_tools (list[str] | Unset): The tools the last iteration's planner called, sorted, each once.
            replan (list[str] | Unset): Set after an iteration without progress that called the same tools as the one
                before:
                fingerprints of its calls, which the next iteration refuses, and whose planner must
                update the plan (a forced replan).
            states (list[str] | Unset): The workspace states (documents and plan statuses) the last iterations left, newest
                last (at most `progress::STATES_KEPT`): a return to one is no progress.
            tool_failure (int | Unset): Consecutive iterations with a tool call refused before it ran (unknown tool, bad
                arguments) and not repaired. Default: 0.
    """

    error: int
    no_progress: int
    repeat: int
    docs_hash: str | Unset = UNSET
    history: list[str] | Unset = UNSET
    last_action_fingerprint: None | str | Unset = UNSET
    last_error_fingerprint: None | str | Unset = UNSET
    last_tools: list[str] | Unset = UNSET
    replan: list[str] | Unset = UNSET
    states: list[str] | Unset = UNSET
    tool_failure: int | Unset = 0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        error = self.error

        no_progress = self.no_progress

        repeat = self.repeat

        docs_hash = self.docs_hash

        history: list[str] | Unset = UNSET
        if not isinstance(self.history, Unset):
            history = self.history

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

        last_tools: list[str] | Unset = UNSET
        if not isinstance(self.last_tools, Unset):
            last_tools = self.last_tools

        replan: list[str] | Unset = UNSET
        if not isinstance(self.replan, Unset):
            replan = self.replan

        states: list[str] | Unset = UNSET
        if not isinstance(self.states, Unset):
            states = self.states

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
        if docs_hash is not UNSET:
            field_dict["docs_hash"] = docs_hash
        if history is not UNSET:
            field_dict["history"] = history
        if last_action_fingerprint is not UNSET:
            field_dict["last_action_fingerprint"] = last_action_fingerprint
        if last_error_fingerprint is not UNSET:
            field_dict["last_error_fingerprint"] = last_error_fingerprint
        if last_tools is not UNSET:
            field_dict["last_tools"] = last_tools
        if replan is not UNSET:
            field_dict["replan"] = replan
        if states is not UNSET:
            field_dict["states"] = states
        if tool_failure is not UNSET:
            field_dict["tool_failure"] = tool_failure

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        error = d.pop("error")

        no_progress = d.pop("no_progress")

        repeat = d.pop("repeat")

        docs_hash = d.pop("docs_hash", UNSET)

        history = cast(list[str], d.pop("history", UNSET))

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

        last_tools = cast(list[str], d.pop("last_tools", UNSET))

        replan = cast(list[str], d.pop("replan", UNSET))

        states = cast(list[str], d.pop("states", UNSET))

        tool_failure = d.pop("tool_failure", UNSET)

        streaks = cls(
            error=error,
            no_progress=no_progress,
            repeat=repeat,
            docs_hash=docs_hash,
            history=history,
            last_action_fingerprint=last_action_fingerprint,
            last_error_fingerprint=last_error_fingerprint,
            last_tools=last_tools,
            replan=replan,
            states=states,
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
