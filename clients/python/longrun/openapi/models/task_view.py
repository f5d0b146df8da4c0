from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.agent_view import AgentView
    from ..models.task_summary import TaskSummary


T = TypeVar("T", bound="TaskView")


@_attrs_define
class TaskView:
    """One terminal task: its summary, TASK.md and its folder as an agent run's is shown.

    Attributes:
        folder (AgentView):
        objective (str): TASK.md (clipped).
        summary (TaskSummary): A task under the projects root that a terminal started
            (`projects_root/<project>/<task>/`).
    """

    folder: AgentView
    objective: str
    summary: TaskSummary
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        folder = self.folder.to_dict()

        objective = self.objective

        summary = self.summary.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "folder": folder,
                "objective": objective,
                "summary": summary,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.agent_view import AgentView
        from ..models.task_summary import TaskSummary

        d = dict(src_dict)
        folder = AgentView.from_dict(d.pop("folder"))

        objective = d.pop("objective")

        summary = TaskSummary.from_dict(d.pop("summary"))

        task_view = cls(
            folder=folder,
            objective=objective,
            summary=summary,
        )

        task_view.additional_properties = d
        return task_view

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
