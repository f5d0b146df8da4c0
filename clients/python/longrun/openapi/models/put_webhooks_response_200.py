from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.put_webhooks_response_200_webhooks_item import (
        PutWebhooksResponse200WebhooksItem,
    )


T = TypeVar("T", bound="PutWebhooksResponse200")


@_attrs_define
class PutWebhooksResponse200:
    """
    Attributes:
        webhooks (list[PutWebhooksResponse200WebhooksItem] | Unset):
    """

    webhooks: list[PutWebhooksResponse200WebhooksItem] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        webhooks: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.webhooks, Unset):
            webhooks = []
            for webhooks_item_data in self.webhooks:
                webhooks_item = webhooks_item_data.to_dict()
                webhooks.append(webhooks_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if webhooks is not UNSET:
            field_dict["webhooks"] = webhooks

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.put_webhooks_response_200_webhooks_item import (
            PutWebhooksResponse200WebhooksItem,
        )

        d = dict(src_dict)
        _webhooks = d.pop("webhooks", UNSET)
        webhooks: list[PutWebhooksResponse200WebhooksItem] | Unset = UNSET
        if _webhooks is not UNSET:
            webhooks = []
            for webhooks_item_data in _webhooks:
                webhooks_item = PutWebhooksResponse200WebhooksItem.from_dict(
                    webhooks_item_data
                )

                webhooks.append(webhooks_item)

        put_webhooks_response_200 = cls(
            webhooks=webhooks,
        )

        put_webhooks_response_200.additional_properties = d
        return put_webhooks_response_200

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
