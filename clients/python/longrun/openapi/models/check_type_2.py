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

T = TypeVar("T", bound="CheckType2")


@_attrs_define
class CheckType2:
    """Agent runs: a shell command in the task folder exits 0.

    Attributes:
        check (Literal['command']):
        run (str):
    """

    check: Literal["command"]
    run: str

    def to_dict(self) -> dict[str, Any]:
        check = self.check

        run = self.run

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "check": check,
                "run": run,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        check = cast(Literal["command"], d.pop("check"))
        if check != "command":
            raise ValueError(f"check must match const 'command', got '{check}'")

        run = d.pop("run")

        check_type_2 = cls(
            check=check,
            run=run,
        )

        return check_type_2
