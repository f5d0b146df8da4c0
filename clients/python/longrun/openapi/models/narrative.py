from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.narrative_source import NarrativeSource
from ..types import UNSET, Unset

T = TypeVar("T", bound="Narrative")


@_attrs_define
class Narrative:
    """The report's narrative: what was asked, what was done, what was found, what is left.

    Attributes:
        source (NarrativeSource): Who wrote the narrative summary.

            `model`: One final model call at the end of the run, priced and counted in its spend.

            `records`: Built from the iteration records, without a model; `note` says why.
        text (str):
        note (None | str | Unset): Why no model wrote it (records only).
    """

    source: NarrativeSource
    text: str
    note: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        source = self.source.value

        text = self.text

        note: None | str | Unset
        if isinstance(self.note, Unset):
            note = UNSET
        else:
            note = self.note

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "source": source,
                "text": text,
            }
        )
        if note is not UNSET:
            field_dict["note"] = note

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        source = NarrativeSource(d.pop("source"))

        text = d.pop("text")

        def _parse_note(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        note = _parse_note(d.pop("note", UNSET))

        narrative = cls(
            source=source,
            text=text,
            note=note,
        )

        narrative.additional_properties = d
        return narrative

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
