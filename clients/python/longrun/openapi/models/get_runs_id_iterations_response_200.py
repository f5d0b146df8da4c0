from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.iteration_record import IterationRecord


T = TypeVar("T", bound="GetRunsIdIterationsResponse200")


@_attrs_define
class GetRunsIdIterationsResponse200:
    """
    Attributes:
        iterations (list[IterationRecord] | Unset):
    """

    iterations: list[IterationRecord] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        iterations: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.iterations, Unset):
            iterations = []
            for iterations_item_data in self.iterations:
                iterations_item = iterations_item_data.to_dict()
                iterations.append(iterations_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if iterations is not UNSET:
            field_dict["iterations"] = iterations

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.iteration_record import IterationRecord

        d = dict(src_dict)
        _iterations = d.pop("iterations", UNSET)
        iterations: list[IterationRecord] | Unset = UNSET
        if _iterations is not UNSET:
            iterations = []
            for iterations_item_data in _iterations:
                iterations_item = IterationRecord.from_dict(iterations_item_data)

                iterations.append(iterations_item)

        get_runs_id_iterations_response_200 = cls(
            iterations=iterations,
        )

        get_runs_id_iterations_response_200.additional_properties = d
        return get_runs_id_iterations_response_200

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
