from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.change_entry import ChangeEntry
    from ..models.doc_link import DocLink
    from ..models.what_changed_sources import WhatChangedSources


T = TypeVar("T", bound="WhatChanged")


@_attrs_define
class WhatChanged:
    """
    Attributes:
        created (list[str]):
        linked (list[str]): Docs the run cited as completion evidence.
        updated (list[str]):
        entries (list[ChangeEntry] | Unset): Every change, typed: each document with the iteration that last wrote it,
            and each
            plan step with the iteration that last touched it.
        links (list[DocLink] | Unset): Document-to-document links: `from` was written after reading `to`.
        sources (WhatChangedSources | Unset): The external sources (URLs, `tool:NAME`) of each created or updated doc
            that has any,
            by path.
    """

    created: list[str]
    linked: list[str]
    updated: list[str]
    entries: list[ChangeEntry] | Unset = UNSET
    links: list[DocLink] | Unset = UNSET
    sources: WhatChangedSources | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created = self.created

        linked = self.linked

        updated = self.updated

        entries: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.entries, Unset):
            entries = []
            for entries_item_data in self.entries:
                entries_item = entries_item_data.to_dict()
                entries.append(entries_item)

        links: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.links, Unset):
            links = []
            for links_item_data in self.links:
                links_item = links_item_data.to_dict()
                links.append(links_item)

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
        if entries is not UNSET:
            field_dict["entries"] = entries
        if links is not UNSET:
            field_dict["links"] = links
        if sources is not UNSET:
            field_dict["sources"] = sources

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.change_entry import ChangeEntry
        from ..models.doc_link import DocLink
        from ..models.what_changed_sources import WhatChangedSources

        d = dict(src_dict)
        created = cast(list[str], d.pop("created"))

        linked = cast(list[str], d.pop("linked"))

        updated = cast(list[str], d.pop("updated"))

        _entries = d.pop("entries", UNSET)
        entries: list[ChangeEntry] | Unset = UNSET
        if _entries is not UNSET:
            entries = []
            for entries_item_data in _entries:
                entries_item = ChangeEntry.from_dict(entries_item_data)

                entries.append(entries_item)

        _links = d.pop("links", UNSET)
        links: list[DocLink] | Unset = UNSET
        if _links is not UNSET:
            links = []
            for links_item_data in _links:
                links_item = DocLink.from_dict(links_item_data)

                links.append(links_item)

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
            entries=entries,
            links=links,
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
