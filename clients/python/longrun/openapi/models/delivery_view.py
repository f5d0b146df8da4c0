from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.delivery_state import DeliveryState
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.attempt_record import AttemptRecord


T = TypeVar("T", bound="DeliveryView")


@_attrs_define
class DeliveryView:
    """One webhook delivery of a run's outcome, as its owner sees it: never the signing secret,
    the signature or the body.

        Attributes:
            attempts (int): Attempts made so far.
            created_at (int): When it was recorded (ms since the epoch).
            history (list[AttemptRecord]): Each attempt, oldest first (the latest 20): when it ended and why it failed.
            id (str): The delivery id, `{run_id}#{iteration}#{status}#{webhook}`, sent as `X-Longrun-Delivery`
                and as the body's `id` on every attempt: one per outcome and webhook, the same on every
                retry, so receivers can drop repeats.
            state (DeliveryState): Where a delivery stands. `Pending` is attempted (again) once `next_at` has passed.

                `given_up`: Refused for good by the receiver (a 4xx other than 429, a URL the SSRF guard refuses) or out of
                attempts; kept with the last error so the owner can see why.
            url (str): Where it is POSTed.
            webhook (int): The webhook's place in your list when the outcome was recorded.
            last_error (None | str | Unset): What the last failed attempt came to (a status code or a connection error).
            next_attempt_at (int | None | Unset): When it is attempted next (ms since the epoch); null once delivered or
                given up.
            settled_at (int | None | Unset): When it was delivered or given up (ms since the epoch); null while pending.
    """

    attempts: int
    created_at: int
    history: list[AttemptRecord]
    id: str
    state: DeliveryState
    url: str
    webhook: int
    last_error: None | str | Unset = UNSET
    next_attempt_at: int | None | Unset = UNSET
    settled_at: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        created_at = self.created_at

        history = []
        for history_item_data in self.history:
            history_item = history_item_data.to_dict()
            history.append(history_item)

        id = self.id

        state = self.state.value

        url = self.url

        webhook = self.webhook

        last_error: None | str | Unset
        if isinstance(self.last_error, Unset):
            last_error = UNSET
        else:
            last_error = self.last_error

        next_attempt_at: int | None | Unset
        if isinstance(self.next_attempt_at, Unset):
            next_attempt_at = UNSET
        else:
            next_attempt_at = self.next_attempt_at

        settled_at: int | None | Unset
        if isinstance(self.settled_at, Unset):
            settled_at = UNSET
        else:
            settled_at = self.settled_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempts": attempts,
                "created_at": created_at,
                "history": history,
                "id": id,
                "state": state,
                "url": url,
                "webhook": webhook,
            }
        )
        if last_error is not UNSET:
            field_dict["last_error"] = last_error
        if next_attempt_at is not UNSET:
            field_dict["next_attempt_at"] = next_attempt_at
        if settled_at is not UNSET:
            field_dict["settled_at"] = settled_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.attempt_record import AttemptRecord

        d = dict(src_dict)
        attempts = d.pop("attempts")

        created_at = d.pop("created_at")

        history = []
        _history = d.pop("history")
        for history_item_data in _history:
            history_item = AttemptRecord.from_dict(history_item_data)

            history.append(history_item)

        id = d.pop("id")

        state = DeliveryState(d.pop("state"))

        url = d.pop("url")

        webhook = d.pop("webhook")

        def _parse_last_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_error = _parse_last_error(d.pop("last_error", UNSET))

        def _parse_next_attempt_at(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at", UNSET))

        def _parse_settled_at(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        settled_at = _parse_settled_at(d.pop("settled_at", UNSET))

        delivery_view = cls(
            attempts=attempts,
            created_at=created_at,
            history=history,
            id=id,
            state=state,
            url=url,
            webhook=webhook,
            last_error=last_error,
            next_attempt_at=next_attempt_at,
            settled_at=settled_at,
        )

        delivery_view.additional_properties = d
        return delivery_view

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
