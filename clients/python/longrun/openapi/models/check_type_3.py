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

T = TypeVar("T", bound="CheckType3")


@_attrs_define
class CheckType3:
    """A rubric judged by the grader over what the claim cites.

    Attributes:
        check (Literal['grader']):
        rubric (str):
    """

    check: Literal["grader"]
    rubric: str

    def to_dict(self) -> dict[str, Any]:
        check = self.check

        rubric = self.rubric

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "check": check,
                "rubric": rubric,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        check = cast(Literal["grader"], d.pop("check"))
        if check != "grader":
            raise ValueError(f"check must match const 'grader', got '{check}'")

        rubric = d.pop("rubric")

        check_type_3 = cls(
            check=check,
            rubric=rubric,
        )

        return check_type_3
