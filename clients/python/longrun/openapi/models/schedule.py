from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.run_template import RunTemplate


T = TypeVar("T", bound="Schedule")


@_attrs_define
class Schedule:
    """
    Attributes:
        created_at (int):
        cron (str): Five fields (minute hour day-of-month month day-of-week), evaluated in UTC.
        id (str):
        next_at (int): When the next run starts (ms since the epoch).
        template (RunTemplate): A run to start: the body of `POST /v1/runs`, and what a schedule starts at each
            occurrence.
        user_id (str):
        last_run_id (None | str | Unset): The run the last occurrence started, if any.
    """

    created_at: int
    cron: str
    id: str
    next_at: int
    template: RunTemplate
    user_id: str
    last_run_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        cron = self.cron

        id = self.id

        next_at = self.next_at

        template = self.template.to_dict()

        user_id = self.user_id

        last_run_id: None | str | Unset
        if isinstance(self.last_run_id, Unset):
            last_run_id = UNSET
        else:
            last_run_id = self.last_run_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "cron": cron,
                "id": id,
                "next_at": next_at,
                "template": template,
                "user_id": user_id,
            }
        )
        if last_run_id is not UNSET:
            field_dict["last_run_id"] = last_run_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.run_template import RunTemplate

        d = dict(src_dict)
        created_at = d.pop("created_at")

        cron = d.pop("cron")

        id = d.pop("id")

        next_at = d.pop("next_at")

        template = RunTemplate.from_dict(d.pop("template"))

        user_id = d.pop("user_id")

        def _parse_last_run_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_run_id = _parse_last_run_id(d.pop("last_run_id", UNSET))

        schedule = cls(
            created_at=created_at,
            cron=cron,
            id=id,
            next_at=next_at,
            template=template,
            user_id=user_id,
            last_run_id=last_run_id,
        )

        schedule.additional_properties = d
        return schedule

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
