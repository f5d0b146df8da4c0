from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.permission_mode import PermissionMode
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.budgets import Budgets


T = TypeVar("T", bound="GetConfigResponse200")


@_attrs_define
class GetConfigResponse200:
    """
    Attributes:
        active_limit (int | Unset):
        default_budgets (Budgets | Unset): Hard limits of a run. Waiting time never counts against `max_running_ms`.
        default_model (str | Unset):
        models (list[str] | Unset):
        permission_modes (list[PermissionMode] | Unset):
        priced_models (list[str] | Unset):
    """

    active_limit: int | Unset = UNSET
    default_budgets: Budgets | Unset = UNSET
    default_model: str | Unset = UNSET
    models: list[str] | Unset = UNSET
    permission_modes: list[PermissionMode] | Unset = UNSET
    priced_models: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        active_limit = self.active_limit

        default_budgets: dict[str, Any] | Unset = UNSET
        if not isinstance(self.default_budgets, Unset):
            default_budgets = self.default_budgets.to_dict()

        default_model = self.default_model

        models: list[str] | Unset = UNSET
        if not isinstance(self.models, Unset):
            models = self.models

        permission_modes: list[str] | Unset = UNSET
        if not isinstance(self.permission_modes, Unset):
            permission_modes = []
            for permission_modes_item_data in self.permission_modes:
                permission_modes_item = permission_modes_item_data.value
                permission_modes.append(permission_modes_item)

        priced_models: list[str] | Unset = UNSET
        if not isinstance(self.priced_models, Unset):
            priced_models = self.priced_models

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if active_limit is not UNSET:
            field_dict["active_limit"] = active_limit
        if default_budgets is not UNSET:
            field_dict["default_budgets"] = default_budgets
        if default_model is not UNSET:
            field_dict["default_model"] = default_model
        if models is not UNSET:
            field_dict["models"] = models
        if permission_modes is not UNSET:
            field_dict["permission_modes"] = permission_modes
        if priced_models is not UNSET:
            field_dict["priced_models"] = priced_models

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.budgets import Budgets

        d = dict(src_dict)
        active_limit = d.pop("active_limit", UNSET)

        _default_budgets = d.pop("default_budgets", UNSET)
        default_budgets: Budgets | Unset
        if isinstance(_default_budgets, Unset):
            default_budgets = UNSET
        else:
            default_budgets = Budgets.from_dict(_default_budgets)

        default_model = d.pop("default_model", UNSET)

        models = cast(list[str], d.pop("models", UNSET))

        _permission_modes = d.pop("permission_modes", UNSET)
        permission_modes: list[PermissionMode] | Unset = UNSET
        if _permission_modes is not UNSET:
            permission_modes = []
            for permission_modes_item_data in _permission_modes:
                permission_modes_item = PermissionMode(permission_modes_item_data)

                permission_modes.append(permission_modes_item)

        priced_models = cast(list[str], d.pop("priced_models", UNSET))

        get_config_response_200 = cls(
            active_limit=active_limit,
            default_budgets=default_budgets,
            default_model=default_model,
            models=models,
            permission_modes=permission_modes,
            priced_models=priced_models,
        )

        get_config_response_200.additional_properties = d
        return get_config_response_200

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
