from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="PadEntry")


@_attrs_define
class PadEntry:
    """The scratchpad entry of one iteration: the journal the next planner reads.

    Attributes:
        actions (list[str]):
        artifacts (list[str]):
        at (int):
        n (int):
        plan_changes (list[str]):
        remaining_work (list[str]):
        results (list[str]):
        summary (str):
        sources (list[str] | Unset): The sources this iteration's tools read; docs written while this entry is in the
            planner's view cite them.
    """

    actions: list[str]
    artifacts: list[str]
    at: int
    n: int
    plan_changes: list[str]
    remaining_work: list[str]
    results: list[str]
    summary: str
    sources: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        actions = self.actions

        artifacts = self.artifacts

        at = self.at

        n = self.n

        plan_changes = self.plan_changes

        remaining_work = self.remaining_work

        results = self.results

        summary = self.summary

        sources: list[str] | Unset = UNSET
        if not isinstance(self.sources, Unset):
            sources = self.sources

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "actions": actions,
                "artifacts": artifacts,
                "at": at,
                "n": n,
                "plan_changes": plan_changes,
                "remaining_work": remaining_work,
                "results": results,
                "summary": summary,
            }
        )
        if sources is not UNSET:
            field_dict["sources"] = sources

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        actions = cast(list[str], d.pop("actions"))

        artifacts = cast(list[str], d.pop("artifacts"))

        at = d.pop("at")

        n = d.pop("n")

        plan_changes = cast(list[str], d.pop("plan_changes"))

        remaining_work = cast(list[str], d.pop("remaining_work"))

        results = cast(list[str], d.pop("results"))

        summary = d.pop("summary")

        sources = cast(list[str], d.pop("sources", UNSET))

        pad_entry = cls(
            actions=actions,
            artifacts=artifacts,
            at=at,
            n=n,
            plan_changes=plan_changes,
            remaining_work=remaining_work,
            results=results,
            summary=summary,
            sources=sources,
        )

        pad_entry.additional_properties = d
        return pad_entry

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
