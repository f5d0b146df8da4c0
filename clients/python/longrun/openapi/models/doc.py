from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="Doc")


@_attrs_define
class Doc:
    """A workspace document. Paths are `/`-separated; the parent is the path's directory.

    Attributes:
        content (str):
        created_iteration (int):
        path (str):
        title (str):
        updated_at (int):
        updated_iteration (int):
        version (int):
        sources (list[str] | Unset): Where what it says came from: the URLs fetched or found by search and the tools
            (`tool:NAME`) whose results the writing iteration had in view, most recent first.
        tags (list[str] | Unset):
    """

    content: str
    created_iteration: int
    path: str
    title: str
    updated_at: int
    updated_iteration: int
    version: int
    sources: list[str] | Unset = UNSET
    tags: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        content = self.content

        created_iteration = self.created_iteration

        path = self.path

        title = self.title

        updated_at = self.updated_at

        updated_iteration = self.updated_iteration

        version = self.version

        sources: list[str] | Unset = UNSET
        if not isinstance(self.sources, Unset):
            sources = self.sources

        tags: list[str] | Unset = UNSET
        if not isinstance(self.tags, Unset):
            tags = self.tags

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "content": content,
                "created_iteration": created_iteration,
                "path": path,
                "title": title,
                "updated_at": updated_at,
                "updated_iteration": updated_iteration,
                "version": version,
            }
        )
        if sources is not UNSET:
            field_dict["sources"] = sources
        if tags is not UNSET:
            field_dict["tags"] = tags

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        content = d.pop("content")

        created_iteration = d.pop("created_iteration")

        path = d.pop("path")

        title = d.pop("title")

        updated_at = d.pop("updated_at")

        updated_iteration = d.pop("updated_iteration")

        version = d.pop("version")

        sources = cast(list[str], d.pop("sources", UNSET))

        tags = cast(list[str], d.pop("tags", UNSET))

        doc = cls(
            content=content,
            created_iteration=created_iteration,
            path=path,
            title=title,
            updated_at=updated_at,
            updated_iteration=updated_iteration,
            version=version,
            sources=sources,
            tags=tags,
        )

        doc.additional_properties = d
        return doc

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
