from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="DocMeta")


@_attrs_define
class DocMeta:
    """
    Attributes:
        bytes_ (int):
        created_iteration (int):
        path (str):
        title (str):
        updated_iteration (int):
        version (int):
        sources (list[str] | Unset):
        tags (list[str] | Unset):
        updated_at (int | Unset): When the iteration that last wrote it began (epoch ms; 0 on docs written before it
            was kept). Default: 0.
    """

    bytes_: int
    created_iteration: int
    path: str
    title: str
    updated_iteration: int
    version: int
    sources: list[str] | Unset = UNSET
    tags: list[str] | Unset = UNSET
    updated_at: int | Unset = 0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        bytes_ = self.bytes_

        created_iteration = self.created_iteration

        path = self.path

        title = self.title

        updated_iteration = self.updated_iteration

        version = self.version

        sources: list[str] | Unset = UNSET
        if not isinstance(self.sources, Unset):
            sources = self.sources

        tags: list[str] | Unset = UNSET
        if not isinstance(self.tags, Unset):
            tags = self.tags

        updated_at = self.updated_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "bytes": bytes_,
                "created_iteration": created_iteration,
                "path": path,
                "title": title,
                "updated_iteration": updated_iteration,
                "version": version,
            }
        )
        if sources is not UNSET:
            field_dict["sources"] = sources
        if tags is not UNSET:
            field_dict["tags"] = tags
        if updated_at is not UNSET:
            field_dict["updated_at"] = updated_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        bytes_ = d.pop("bytes")

        created_iteration = d.pop("created_iteration")

        path = d.pop("path")

        title = d.pop("title")

        updated_iteration = d.pop("updated_iteration")

        version = d.pop("version")

        sources = cast(list[str], d.pop("sources", UNSET))

        tags = cast(list[str], d.pop("tags", UNSET))

        updated_at = d.pop("updated_at", UNSET)

        doc_meta = cls(
            bytes_=bytes_,
            created_iteration=created_iteration,
            path=path,
            title=title,
            updated_iteration=updated_iteration,
            version=version,
            sources=sources,
            tags=tags,
            updated_at=updated_at,
        )

        doc_meta.additional_properties = d
        return doc_meta

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
