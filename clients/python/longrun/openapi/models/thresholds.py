from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="Thresholds")


@_attrs_define
class Thresholds:
    """Breaker thresholds, configurable per run.

    Attributes:
        child_wait_timeout_s (int | Unset): Seconds a run waits for its children (`wait_for_children`) before it goes on
            without
            them: the children still running are left running on their own, as if detached, and
            the next prompt names them. Default: 3600.
        no_progress_limit (int | Unset): Consecutive iterations without progress before `no_progress`. Default: 3.
        repeated_action_limit (int | Unset): Consecutive repeats of the same action set without progress before
            `no_progress`:
            1 (the default) stops on the second identical set in a row; with more, the repeats
            before the last each earn an anti-repetition hint. Default: 1.
        repeated_error_limit (int | Unset): Consecutive iterations failing with the same error fingerprint before
            `repeated_error`. Default: 5.
        repeated_tool_failure_limit (int | Unset): Consecutive iterations whose tool calls named a tool that does not
            exist (or is not
            allowed) or gave arguments its schema refuses, with no call of that tool succeeding
            after repair, before `repeated_error`. Default: 3.
    """

    child_wait_timeout_s: int | Unset = 3600
    no_progress_limit: int | Unset = 3
    repeated_action_limit: int | Unset = 1
    repeated_error_limit: int | Unset = 5
    repeated_tool_failure_limit: int | Unset = 3

    def to_dict(self) -> dict[str, Any]:
        child_wait_timeout_s = self.child_wait_timeout_s

        no_progress_limit = self.no_progress_limit

        repeated_action_limit = self.repeated_action_limit

        repeated_error_limit = self.repeated_error_limit

        repeated_tool_failure_limit = self.repeated_tool_failure_limit

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if child_wait_timeout_s is not UNSET:
            field_dict["child_wait_timeout_s"] = child_wait_timeout_s
        if no_progress_limit is not UNSET:
            field_dict["no_progress_limit"] = no_progress_limit
        if repeated_action_limit is not UNSET:
            field_dict["repeated_action_limit"] = repeated_action_limit
        if repeated_error_limit is not UNSET:
            field_dict["repeated_error_limit"] = repeated_error_limit
        if repeated_tool_failure_limit is not UNSET:
            field_dict["repeated_tool_failure_limit"] = repeated_tool_failure_limit

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        child_wait_timeout_s = d.pop("child_wait_timeout_s", UNSET)

        no_progress_limit = d.pop("no_progress_limit", UNSET)

        repeated_action_limit = d.pop("repeated_action_limit", UNSET)

        repeated_error_limit = d.pop("repeated_error_limit", UNSET)

        repeated_tool_failure_limit = d.pop("repeated_tool_failure_limit", UNSET)

        thresholds = cls(
            child_wait_timeout_s=child_wait_timeout_s,
            no_progress_limit=no_progress_limit,
            repeated_action_limit=repeated_action_limit,
            repeated_error_limit=repeated_error_limit,
            repeated_tool_failure_limit=repeated_tool_failure_limit,
        )

        return thresholds
