from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.run_status import RunStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.notification_data import NotificationData
    from ..models.notification_metrics import NotificationMetrics


T = TypeVar("T", bound="Notification")


@_attrs_define
class Notification:
    """
    Attributes:
        at (int):
        id (str): `{run_id}#{iteration}#{status}`: one notification per outcome, however often published.
        link (str):
        read (bool):
        run_id (str):
        status (RunStatus): `paused`: Held by the user between iterations; `continue` queues it again.
        summary (str):
        title (str):
        user_id (str):
        action_url (str | Unset): The deep link to the run's page (the same as `link`). Default: ''.
        data (None | NotificationData | Unset): The run, its status, why it stopped and what it spent (absent on
            notifications stored
            before it was written).
        message (str | Unset): The narrative's first sentences, or the questions when the run waits on the user.
            Default: ''.
        metrics (NotificationMetrics | Unset):
        questions (list[str] | Unset): What the run asks when it waits on the user.
    """

    at: int
    id: str
    link: str
    read: bool
    run_id: str
    status: RunStatus
    summary: str
    title: str
    user_id: str
    action_url: str | Unset = ""
    data: None | NotificationData | Unset = UNSET
    message: str | Unset = ""
    metrics: NotificationMetrics | Unset = UNSET
    questions: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.notification_data import NotificationData

        at = self.at

        id = self.id

        link = self.link

        read = self.read

        run_id = self.run_id

        status = self.status.value

        summary = self.summary

        title = self.title

        user_id = self.user_id

        action_url = self.action_url

        data: dict[str, Any] | None | Unset
        if isinstance(self.data, Unset):
            data = UNSET
        elif isinstance(self.data, NotificationData):
            data = self.data.to_dict()
        else:
            data = self.data

        message = self.message

        metrics: dict[str, Any] | Unset = UNSET
        if not isinstance(self.metrics, Unset):
            metrics = self.metrics.to_dict()

        questions: list[str] | Unset = UNSET
        if not isinstance(self.questions, Unset):
            questions = self.questions

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "id": id,
                "link": link,
                "read": read,
                "run_id": run_id,
                "status": status,
                "summary": summary,
                "title": title,
                "user_id": user_id,
            }
        )
        if action_url is not UNSET:
            field_dict["action_url"] = action_url
        if data is not UNSET:
            field_dict["data"] = data
        if message is not UNSET:
            field_dict["message"] = message
        if metrics is not UNSET:
            field_dict["metrics"] = metrics
        if questions is not UNSET:
            field_dict["questions"] = questions

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.notification_data import NotificationData
        from ..models.notification_metrics import NotificationMetrics

        d = dict(src_dict)
        at = d.pop("at")

        id = d.pop("id")

        link = d.pop("link")

        read = d.pop("read")

        run_id = d.pop("run_id")

        status = RunStatus(d.pop("status"))

        summary = d.pop("summary")

        title = d.pop("title")

        user_id = d.pop("user_id")

        action_url = d.pop("action_url", UNSET)

        def _parse_data(data: object) -> None | NotificationData | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                data_type_0 = NotificationData.from_dict(data)

                return data_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | NotificationData | Unset, data)

        data = _parse_data(d.pop("data", UNSET))

        message = d.pop("message", UNSET)

        _metrics = d.pop("metrics", UNSET)
        metrics: NotificationMetrics | Unset
        if isinstance(_metrics, Unset):
            metrics = UNSET
        else:
            metrics = NotificationMetrics.from_dict(_metrics)

        questions = cast(list[str], d.pop("questions", UNSET))

        notification = cls(
            at=at,
            id=id,
            link=link,
            read=read,
            run_id=run_id,
            status=status,
            summary=summary,
            title=title,
            user_id=user_id,
            action_url=action_url,
            data=data,
            message=message,
            metrics=metrics,
            questions=questions,
        )

        notification.additional_properties = d
        return notification

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
