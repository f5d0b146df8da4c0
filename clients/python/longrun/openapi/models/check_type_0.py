from __future__ import annotations

from collections.abc import Mapping
from typing import (
    Any,
    Literal,
    TypeVar,
    cast,
)

from attrs import define as _attrs_define
from typing_extensions import Self

T = TypeVar("T", bound="CheckType0")


@_attrs_define
class CheckType0:
    """A document of this run contains a text (case-sensitive).

    Attributes:
        check (Literal['contains']):
        doc (str):
        text (str):
    """

    check: Literal["contains"]
    doc: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        check = self.check

        doc = self.doc

        text = self.text

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "check": check,
                "doc": doc,
                "text": text,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        check = cast(Literal["contains"], d.pop("check"))
        if check != "contains":
            raise ValueError(f"check must match const 'contains', got '{check}'")

        doc = d.pop("doc")

        text = d.pop("text")

        check_type_0 = cls(
            check=check,
            doc=doc,
            text=text,
        )

        return check_type_0
