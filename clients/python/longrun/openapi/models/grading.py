from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="Grading")


@_attrs_define
class Grading:
    """How a run's plain-text criteria are graded.

    Attributes:
        model (None | str | Unset): The grader's `provider:model`, one of the server's models; the run's model when
            absent.
        text (bool | Unset): Whether a grader judges the cited content against each plain-text criterion (default
            true); checks run either way. Default: True.
    """

    model: None | str | Unset = UNSET
    text: bool | Unset = True

    def to_dict(self) -> dict[str, Any]:
        model: None | str | Unset
        if isinstance(self.model, Unset):
            model = UNSET
        else:
            model = self.model

        text = self.text

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if model is not UNSET:
            field_dict["model"] = model
        if text is not UNSET:
            field_dict["text"] = text

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        model = _parse_model(d.pop("model", UNSET))

        text = d.pop("text", UNSET)

        grading = cls(
            model=model,
            text=text,
        )

        return grading
