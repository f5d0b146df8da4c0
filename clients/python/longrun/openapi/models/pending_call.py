from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.decision_type_0 import DecisionType0
    from ..models.decision_type_1 import DecisionType1


T = TypeVar("T", bound="PendingCall")


@_attrs_define
class PendingCall:
    """A write the planner proposed under `per_write`, held until the user decides.

    Attributes:
        args (Any):
        id (str): `c{iteration}.{k}`: what the user approves or rejects.
        name (str):
        decision (DecisionType0 | DecisionType1 | None | Unset):
    """

    args: Any
    id: str
    name: str
    decision: DecisionType0 | DecisionType1 | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.decision_type_0 import DecisionType0
        from ..models.decision_type_1 import DecisionType1

        args = self.args

        id = self.id

        name = self.name

        decision: dict[str, Any] | None | Unset
        if isinstance(self.decision, Unset):
            decision = UNSET
        elif isinstance(self.decision, DecisionType0) or isinstance(
            self.decision, DecisionType1
        ):
            decision = self.decision.to_dict()
        else:
            decision = self.decision

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "args": args,
                "id": id,
                "name": name,
            }
        )
        if decision is not UNSET:
            field_dict["decision"] = decision

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.decision_type_0 import DecisionType0
        from ..models.decision_type_1 import DecisionType1

        d = dict(src_dict)
        args = d.pop("args")

        id = d.pop("id")

        name = d.pop("name")

        def _parse_decision(
            data: object,
        ) -> DecisionType0 | DecisionType1 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_decision_type_0 = DecisionType0.from_dict(data)

                return componentsschemas_decision_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_decision_type_1 = DecisionType1.from_dict(data)

                return componentsschemas_decision_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DecisionType0 | DecisionType1 | None | Unset, data)

        decision = _parse_decision(d.pop("decision", UNSET))

        pending_call = cls(
            args=args,
            id=id,
            name=name,
            decision=decision,
        )

        pending_call.additional_properties = d
        return pending_call

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
