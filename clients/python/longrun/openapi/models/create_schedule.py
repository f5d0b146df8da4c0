from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.run_template import RunTemplate


T = TypeVar("T", bound="CreateSchedule")


@_attrs_define
class CreateSchedule:
    """
    Attributes:
        cron (str): Five-field cron expression, evaluated in UTC, e.g. `0 9 * * 1-5`.
        template (RunTemplate): A run to start: the body of `POST /v1/runs`, and what a schedule starts at each
            occurrence.
    """

    cron: str
    template: RunTemplate

    def to_dict(self) -> dict[str, Any]:
        cron = self.cron

        template = self.template.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cron": cron,
                "template": template,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.run_template import RunTemplate

        d = dict(src_dict)
        cron = d.pop("cron")

        template = RunTemplate.from_dict(d.pop("template"))

        create_schedule = cls(
            cron=cron,
            template=template,
        )

        return create_schedule
