from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.scope import Scope
from ..types import UNSET, Unset

T = TypeVar("T", bound="RunScope")


@_attrs_define
class RunScope:
    """A run's scope and the projects it names, as checked at creation: `global` names none,
    `project` one, `multi_project` one or more.

        Attributes:
            scope (Scope): Which of the caller's projects a run works in (the seed's `scope`).

                `global`: No project in particular.

                `project`: The one project `project_ids` names.

                `multi_project`: The projects `project_ids` names.
            project_ids (list[str] | Unset):
    """

    scope: Scope
    project_ids: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        scope = self.scope.value

        project_ids: list[str] | Unset = UNSET
        if not isinstance(self.project_ids, Unset):
            project_ids = self.project_ids

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "scope": scope,
            }
        )
        if project_ids is not UNSET:
            field_dict["project_ids"] = project_ids

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        scope = Scope(d.pop("scope"))

        project_ids = cast(list[str], d.pop("project_ids", UNSET))

        run_scope = cls(
            scope=scope,
            project_ids=project_ids,
        )

        run_scope.additional_properties = d
        return run_scope

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
