from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.task_status import TaskStatus
from ..types import UNSET, Unset

T = TypeVar("T", bound="TaskSummary")


@_attrs_define
class TaskSummary:
    """A task under the projects root that a terminal started (`projects_root/<project>/<task>/`).

    Attributes:
        agent (str): The newest root process's backend.
        input_tokens (int):
        output_tokens (int):
        processes (int): Agent processes so far: the root's runs and every child.
        project (str):
        status (TaskStatus): How a task started from a terminal (`longrun task`) stands.

            `running`: Its loop or one of its agent processes is alive.

            `done`: DONE is in the task folder and nothing of it runs.

            `ended`: Nothing of it runs and there is no DONE: stopped, out of restarts or budget, or failed.
        task (str):
        title (str): The first line of TASK.md (clipped).
        cost_usd (float | None | Unset):
        started (None | str | Unset): RFC 3339: the first process's start; absent before one started.
        updated (None | str | Unset): RFC 3339: the newest start or end of any of its processes.
    """

    agent: str
    input_tokens: int
    output_tokens: int
    processes: int
    project: str
    status: TaskStatus
    task: str
    title: str
    cost_usd: float | None | Unset = UNSET
    started: None | str | Unset = UNSET
    updated: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        agent = self.agent

        input_tokens = self.input_tokens

        output_tokens = self.output_tokens

        processes = self.processes

        project = self.project

        status = self.status.value

        task = self.task

        title = self.title

        cost_usd: float | None | Unset
        if isinstance(self.cost_usd, Unset):
            cost_usd = UNSET
        else:
            cost_usd = self.cost_usd

        started: None | str | Unset
        if isinstance(self.started, Unset):
            started = UNSET
        else:
            started = self.started

        updated: None | str | Unset
        if isinstance(self.updated, Unset):
            updated = UNSET
        else:
            updated = self.updated

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "agent": agent,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "processes": processes,
                "project": project,
                "status": status,
                "task": task,
                "title": title,
            }
        )
        if cost_usd is not UNSET:
            field_dict["cost_usd"] = cost_usd
        if started is not UNSET:
            field_dict["started"] = started
        if updated is not UNSET:
            field_dict["updated"] = updated

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        agent = d.pop("agent")

        input_tokens = d.pop("input_tokens")

        output_tokens = d.pop("output_tokens")

        processes = d.pop("processes")

        project = d.pop("project")

        status = TaskStatus(d.pop("status"))

        task = d.pop("task")

        title = d.pop("title")

        def _parse_cost_usd(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cost_usd = _parse_cost_usd(d.pop("cost_usd", UNSET))

        def _parse_started(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        started = _parse_started(d.pop("started", UNSET))

        def _parse_updated(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        updated = _parse_updated(d.pop("updated", UNSET))

        task_summary = cls(
            agent=agent,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            processes=processes,
            project=project,
            status=status,
            task=task,
            title=title,
            cost_usd=cost_usd,
            started=started,
            updated=updated,
        )

        task_summary.additional_properties = d
        return task_summary

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
