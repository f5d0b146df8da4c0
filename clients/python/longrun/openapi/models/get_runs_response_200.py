from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.run_summary import RunSummary


T = TypeVar("T", bound="GetRunsResponse200")


@_attrs_define
class GetRunsResponse200:
    """
    Attributes:
        active (int):
        active_limit (int):
        next_cursor (None | str): Pass as `cursor` for the next page; null on the last
        runs (list[RunSummary]):
    """

    active: int
    active_limit: int
    next_cursor: None | str
    runs: list[RunSummary]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        active = self.active

        active_limit = self.active_limit

        next_cursor: None | str
        next_cursor = self.next_cursor

        runs = []
        for runs_item_data in self.runs:
            runs_item = runs_item_data.to_dict()
            runs.append(runs_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "active": active,
                "active_limit": active_limit,
                "next_cursor": next_cursor,
                "runs": runs,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.run_summary import RunSummary

        d = dict(src_dict)
        active = d.pop("active")

        active_limit = d.pop("active_limit")

        def _parse_next_cursor(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        next_cursor = _parse_next_cursor(d.pop("next_cursor"))

        runs = []
        _runs = d.pop("runs")
        for runs_item_data in _runs:
            runs_item = RunSummary.from_dict(runs_item_data)

            runs.append(runs_item)

        get_runs_response_200 = cls(
            active=active,
            active_limit=active_limit,
            next_cursor=next_cursor,
            runs=runs,
        )

        get_runs_response_200.additional_properties = d
        return get_runs_response_200

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
