from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.change import Change
    from ..models.link import Link
    from ..models.what_changed_sources import WhatChangedSources


T = TypeVar("T", bound="WhatChanged")


@_attrs_define
class WhatChanged:
    """What the run changed, from its committed workspace and plan. Each thing is listed once:
    in `created`, or in `updated` once it was written again (a document) or moved past pending
    (a plan step).

        Attributes:
            created (list[Change]):
            linked (list[Link]): How the things the run changed relate: a document to the documents it was written
                from, and the documents and plan steps its completion evidence cites to the run.
            updated (list[Change]):
            sources (WhatChangedSources | Unset): The external sources (URLs, `tool:NAME`) of each created or updated doc
                that has any,
                by path.
    """

    created: list[Change]
    linked: list[Link]
    updated: list[Change]
    sources: WhatChangedSources | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created = []
        for created_item_data in self.created:
            created_item = created_item_data.to_dict()
            created.append(created_item)

        linked = []
        for linked_item_data in self.linked:
            linked_item = linked_item_data.to_dict()
            linked.append(linked_item)

        updated = []
        for updated_item_data in self.updated:
            updated_item = updated_item_data.to_dict()
            updated.append(updated_item)

        sources: dict[str, Any] | Unset = UNSET
        if not isinstance(self.sources, Unset):
            sources = self.sources.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created": created,
                "linked": linked,
                "updated": updated,
            }
        )
        if sources is not UNSET:
            field_dict["sources"] = sources

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.change import Change
        from ..models.link import Link
        from ..models.what_changed_sources import WhatChangedSources

        d = dict(src_dict)
        created = []
        _created = d.pop("created")
        for created_item_data in _created:
            created_item = Change.from_dict(created_item_data)

            created.append(created_item)

        linked = []
        _linked = d.pop("linked")
        for linked_item_data in _linked:
            linked_item = Link.from_dict(linked_item_data)

            linked.append(linked_item)

        updated = []
        _updated = d.pop("updated")
        for updated_item_data in _updated:
            updated_item = Change.from_dict(updated_item_data)

            updated.append(updated_item)

        _sources = d.pop("sources", UNSET)
        sources: WhatChangedSources | Unset
        if isinstance(_sources, Unset):
            sources = UNSET
        else:
            sources = WhatChangedSources.from_dict(_sources)

        what_changed = cls(
            created=created,
            linked=linked,
            updated=updated,
            sources=sources,
        )

        what_changed.additional_properties = d
        return what_changed

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
