from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

T = TypeVar("T", bound="McpServerView")


@_attrs_define
class McpServerView:
    """A registration as the API shows it: the secret stays inside.

    Attributes:
        created_at (int):
        has_secret (bool):
        name (str):
        url (str):
    """

    created_at: int
    has_secret: bool
    name: str
    url: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at

        has_secret = self.has_secret

        name = self.name

        url = self.url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "has_secret": has_secret,
                "name": name,
                "url": url,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        created_at = d.pop("created_at")

        has_secret = d.pop("has_secret")

        name = d.pop("name")

        url = d.pop("url")

        mcp_server_view = cls(
            created_at=created_at,
            has_secret=has_secret,
            name=name,
            url=url,
        )

        mcp_server_view.additional_properties = d
        return mcp_server_view

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
