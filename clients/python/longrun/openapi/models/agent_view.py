from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

if TYPE_CHECKING:
    from ..models.agent_process_info import AgentProcessInfo
    from ..models.bus_message import BusMessage


T = TypeVar("T", bound="AgentView")


@_attrs_define
class AgentView:
    """
    Attributes:
        bus (list[BusMessage]): The task's message bus, oldest first (the last 200 messages).
        output (str): The newest root process's `output.md` (clipped).
        processes (list[AgentProcessInfo]): Every agent process of the run, oldest first: the root's restarts chained by
            `previous_run_id`, children naming their parent in `parent_run_id`.
        tail (str): The last lines of the newest process's stdout and stderr.
        task_dir (str): The task folder on the server (`projects_root/<user>/<run id>/`).
        task_state (str): `TASK_STATE.md`, the agent's short status (clipped).
    """

    bus: list[BusMessage]
    output: str
    processes: list[AgentProcessInfo]
    tail: str
    task_dir: str
    task_state: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        bus = []
        for bus_item_data in self.bus:
            bus_item = bus_item_data.to_dict()
            bus.append(bus_item)

        output = self.output

        processes = []
        for processes_item_data in self.processes:
            processes_item = processes_item_data.to_dict()
            processes.append(processes_item)

        tail = self.tail

        task_dir = self.task_dir

        task_state = self.task_state

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "bus": bus,
                "output": output,
                "processes": processes,
                "tail": tail,
                "task_dir": task_dir,
                "task_state": task_state,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.agent_process_info import AgentProcessInfo
        from ..models.bus_message import BusMessage

        d = dict(src_dict)
        bus = []
        _bus = d.pop("bus")
        for bus_item_data in _bus:
            bus_item = BusMessage.from_dict(bus_item_data)

            bus.append(bus_item)

        output = d.pop("output")

        processes = []
        _processes = d.pop("processes")
        for processes_item_data in _processes:
            processes_item = AgentProcessInfo.from_dict(processes_item_data)

            processes.append(processes_item)

        tail = d.pop("tail")

        task_dir = d.pop("task_dir")

        task_state = d.pop("task_state")

        agent_view = cls(
            bus=bus,
            output=output,
            processes=processes,
            tail=tail,
            task_dir=task_dir,
            task_state=task_state,
        )

        agent_view.additional_properties = d
        return agent_view

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
