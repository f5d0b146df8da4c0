from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.notification import Notification


T = TypeVar("T", bound="GetNotificationsResponse200")


@_attrs_define
class GetNotificationsResponse200:
    """
    Attributes:
        notifications (list[Notification] | Unset):
    """

    notifications: list[Notification] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        notifications: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.notifications, Unset):
            notifications = []
            for notifications_item_data in self.notifications:
                notifications_item = notifications_item_data.to_dict()
                notifications.append(notifications_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if notifications is not UNSET:
            field_dict["notifications"] = notifications

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.notification import Notification

        d = dict(src_dict)
        _notifications = d.pop("notifications", UNSET)
        notifications: list[Notification] | Unset = UNSET
        if _notifications is not UNSET:
            notifications = []
            for notifications_item_data in _notifications:
                notifications_item = Notification.from_dict(notifications_item_data)

                notifications.append(notifications_item)

        get_notifications_response_200 = cls(
            notifications=notifications,
        )

        get_notifications_response_200.additional_properties = d
        return get_notifications_response_200

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
