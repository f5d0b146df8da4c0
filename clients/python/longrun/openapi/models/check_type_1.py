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

T = TypeVar("T", bound="CheckType1")


@_attrs_define
class CheckType1:
    """A document of this run matches a regular expression (Rust `regex` syntax).

    Attributes:
        check (Literal['matches']):
        doc (str):
        pattern (str):
    """

    check: Literal["matches"]
    doc: str
    pattern: str

    def to_dict(self) -> dict[str, Any]:
        check = self.check

        doc = self.doc

        pattern = self.pattern

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "check": check,
                "doc": doc,
                "pattern": pattern,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        check = cast(Literal["matches"], d.pop("check"))
        if check != "matches":
            raise ValueError(f"check must match const 'matches', got '{check}'")

        doc = d.pop("doc")

        pattern = d.pop("pattern")

        check_type_1 = cls(
            check=check,
            doc=doc,
            pattern=pattern,
        )

        return check_type_1
