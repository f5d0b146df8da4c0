from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

T = TypeVar("T", bound="Webhook")


@_attrs_define
class Webhook:
    """Where a user's run outcomes are POSTed, signed with the secret (HMAC-SHA256).

    Attributes:
        secret (str): At least 16 characters.
        url (str):
    """

    secret: str
    url: str

    def to_dict(self) -> dict[str, Any]:
        secret = self.secret

        url = self.url

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "secret": secret,
                "url": url,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        secret = d.pop("secret")

        url = d.pop("url")

        webhook = cls(
            secret=secret,
            url=url,
        )

        return webhook
