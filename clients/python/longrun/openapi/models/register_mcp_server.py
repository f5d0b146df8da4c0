from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="RegisterMcpServer")


@_attrs_define
class RegisterMcpServer:
    """
    Attributes:
        name (str): `[a-z][a-z0-9_]*`, at most 32 characters: runs see its tools as `{name}.{tool}`.
        url (str):
        secret (None | str | Unset): Sent as `Authorization: Bearer {secret}`; printable ASCII, never returned.
    """

    name: str
    url: str
    secret: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        url = self.url

        secret: None | str | Unset
        if isinstance(self.secret, Unset):
            secret = UNSET
        else:
            secret = self.secret

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "url": url,
            }
        )
        if secret is not UNSET:
            field_dict["secret"] = secret

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        url = d.pop("url")

        def _parse_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        secret = _parse_secret(d.pop("secret", UNSET))

        register_mcp_server = cls(
            name=name,
            url=url,
            secret=secret,
        )

        return register_mcp_server
