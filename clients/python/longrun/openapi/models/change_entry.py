from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.change_action import ChangeAction
from ..models.change_kind import ChangeKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="ChangeEntry")


@_attrs_define
class ChangeEntry:
    """One thing the run changed.

    Attributes:
        change (ChangeAction):
        iteration (int): The iteration that last wrote the document or touched the step.
        kind (ChangeKind):
        title (str):
        id (None | str | Unset): The step's id (plan steps).
        path (None | str | Unset): The document's path (documents).
    """

    change: ChangeAction
    iteration: int
    kind: ChangeKind
    title: str
    id: None | str | Unset = UNSET
    path: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        change = self.change.value

        iteration = self.iteration

        kind = self.kind.value

        title = self.title

        id: None | str | Unset
        if isinstance(self.id, Unset):
            id = UNSET
        else:
            id = self.id

        path: None | str | Unset
        if isinstance(self.path, Unset):
            path = UNSET
        else:
            path = self.path

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "change": change,
                "iteration": iteration,
                "kind": kind,
                "title": title,
            }
        )
        if id is not UNSET:
            field_dict["id"] = id
        if path is not UNSET:
            field_dict["path"] = path

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        change = ChangeAction(d.pop("change"))

        iteration = d.pop("iteration")

        kind = ChangeKind(d.pop("kind"))

        title = d.pop("title")

        def _parse_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))

        def _parse_path(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        path = _parse_path(d.pop("path", UNSET))

        change_entry = cls(
            change=change,
            iteration=iteration,
            kind=kind,
            title=title,
            id=id,
            path=path,
        )

        change_entry.additional_properties = d
        return change_entry

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
