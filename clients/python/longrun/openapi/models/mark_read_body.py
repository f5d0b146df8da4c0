from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

T = TypeVar("T", bound="MarkReadBody")


@_attrs_define
class MarkReadBody:
    """
    Attributes:
        ids (list[str]): Ids of your notifications to mark read (at most 200); unknown ids are ignored.
    """

    ids: list[str]

    def to_dict(self) -> dict[str, Any]:
        ids = self.ids

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "ids": ids,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        ids = cast(list[str], d.pop("ids"))

        mark_read_body = cls(
            ids=ids,
        )

        return mark_read_body
