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
    from ..models.stopping_reason import StoppingReason


T = TypeVar("T", bound="OutcomePayload")


@_attrs_define
class OutcomePayload:
    """The body POSTed to a user's webhooks for each outcome (signed, `X-Longrun-Signature`).

    Attributes:
        action_url (str): The deep link to the run's page.
        at (int):
        data (NotificationData): The run an outcome is about, its status, why it stopped and what it spent.
        id (str): The delivery id `{run_id}#{iteration}#{status}#{webhook}` (`webhook`: the webhook's
            place in your list when the outcome was recorded), also the `X-Longrun-Delivery`
            header: one per outcome and webhook, the same on every attempt, so receivers can drop
            repeats — and two of your webhooks that reach one receiver do not look like one.
        link (str): The same as `action_url`.
        message (str):
        metrics (NotificationMetrics):
        questions (list[str]):
        run_id (str):
        status (RunStatus): `paused`: Held by the user between iterations; `continue` queues it again.
        summary (str): The last iteration's one-line summary.
        text (str): Slack-compatible: the linked title and the message.
        title (str):
        stopping_reason (None | StoppingReason | Unset):
    """

    action_url: str
    at: int
    data: NotificationData
    id: str
    link: str
    message: str
    metrics: NotificationMetrics
    questions: list[str]
    run_id: str
    status: RunStatus
    summary: str
    text: str
    title: str
    stopping_reason: None | StoppingReason | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.stopping_reason import StoppingReason

        action_url = self.action_url

        at = self.at

        data = self.data.to_dict()

        id = self.id

        link = self.link

        message = self.message

        metrics = self.metrics.to_dict()

        questions = self.questions

        run_id = self.run_id

        status = self.status.value

        summary = self.summary

        text = self.text

        title = self.title

        stopping_reason: dict[str, Any] | None | Unset
        if isinstance(self.stopping_reason, Unset):
            stopping_reason = UNSET
        elif isinstance(self.stopping_reason, StoppingReason):
            stopping_reason = self.stopping_reason.to_dict()
        else:
            stopping_reason = self.stopping_reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "action_url": action_url,
                "at": at,
                "data": data,
                "id": id,
                "link": link,
                "message": message,
                "metrics": metrics,
                "questions": questions,
                "run_id": run_id,
                "status": status,
                "summary": summary,
                "text": text,
                "title": title,
            }
        )
        if stopping_reason is not UNSET:
            field_dict["stopping_reason"] = stopping_reason

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.notification_data import NotificationData
        from ..models.notification_metrics import NotificationMetrics
        from ..models.stopping_reason import StoppingReason

        d = dict(src_dict)
        action_url = d.pop("action_url")

        at = d.pop("at")

        data = NotificationData.from_dict(d.pop("data"))

        id = d.pop("id")

        link = d.pop("link")

        message = d.pop("message")

        metrics = NotificationMetrics.from_dict(d.pop("metrics"))

        questions = cast(list[str], d.pop("questions"))

        run_id = d.pop("run_id")

        status = RunStatus(d.pop("status"))

        summary = d.pop("summary")

        text = d.pop("text")

        title = d.pop("title")

        def _parse_stopping_reason(data: object) -> None | StoppingReason | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                stopping_reason_type_0 = StoppingReason.from_dict(data)

                return stopping_reason_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StoppingReason | Unset, data)

        stopping_reason = _parse_stopping_reason(d.pop("stopping_reason", UNSET))

        outcome_payload = cls(
            action_url=action_url,
            at=at,
            data=data,
            id=id,
            link=link,
            message=message,
            metrics=metrics,
            questions=questions,
            run_id=run_id,
            status=status,
            summary=summary,
            text=text,
            title=title,
            stopping_reason=stopping_reason,
        )

        outcome_payload.additional_properties = d
        return outcome_payload

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
