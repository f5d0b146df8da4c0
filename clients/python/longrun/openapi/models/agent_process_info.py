from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..types import UNSET, Unset

T = TypeVar("T", bound="AgentProcessInfo")


@_attrs_define
class AgentProcessInfo:
    """
    Attributes:
        agent (str): The backend that ran (`claude`, `codex`, `gemini`, or a configured command).
        input_tokens (int):
        output_tokens (int):
        run_id (str): `YYYYMMDD-HHMMSSMMMM-PID`.
        start_time (str): RFC 3339.
        cost_usd (float | None | Unset):
        end_time (None | str | Unset): RFC 3339; absent while the process runs.
        ended (None | str | Unset): `exited`, `stuck`, `stopped`, `out_of_time` or `failed_fast`.
        exit_code (int | None | Unset):
        iteration (int | None | Unset): The longrun iteration this process is (root processes only).
        parent_run_id (None | str | Unset):
        pid (int | None | Unset):
        previous_run_id (None | str | Unset):
    """

    agent: str
    input_tokens: int
    output_tokens: int
    run_id: str
    start_time: str
    cost_usd: float | None | Unset = UNSET
    end_time: None | str | Unset = UNSET
    ended: None | str | Unset = UNSET
    exit_code: int | None | Unset = UNSET
    iteration: int | None | Unset = UNSET
    parent_run_id: None | str | Unset = UNSET
    pid: int | None | Unset = UNSET
    previous_run_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        agent = self.agent

        input_tokens = self.input_tokens

        output_tokens = self.output_tokens

        run_id = self.run_id

        start_time = self.start_time

        cost_usd: float | None | Unset
        if isinstance(self.cost_usd, Unset):
            cost_usd = UNSET
        else:
            cost_usd = self.cost_usd

        end_time: None | str | Unset
        if isinstance(self.end_time, Unset):
            end_time = UNSET
        else:
            end_time = self.end_time

        ended: None | str | Unset
        if isinstance(self.ended, Unset):
            ended = UNSET
        else:
            ended = self.ended

        exit_code: int | None | Unset
        if isinstance(self.exit_code, Unset):
            exit_code = UNSET
        else:
            exit_code = self.exit_code

        iteration: int | None | Unset
        if isinstance(self.iteration, Unset):
            iteration = UNSET
        else:
            iteration = self.iteration

        parent_run_id: None | str | Unset
        if isinstance(self.parent_run_id, Unset):
            parent_run_id = UNSET
        else:
            parent_run_id = self.parent_run_id

        pid: int | None | Unset
        if isinstance(self.pid, Unset):
            pid = UNSET
        else:
            pid = self.pid

        previous_run_id: None | str | Unset
        if isinstance(self.previous_run_id, Unset):
            previous_run_id = UNSET
        else:
            previous_run_id = self.previous_run_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "agent": agent,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "run_id": run_id,
                "start_time": start_time,
            }
        )
        if cost_usd is not UNSET:
            field_dict["cost_usd"] = cost_usd
        if end_time is not UNSET:
            field_dict["end_time"] = end_time
        if ended is not UNSET:
            field_dict["ended"] = ended
        if exit_code is not UNSET:
            field_dict["exit_code"] = exit_code
        if iteration is not UNSET:
            field_dict["iteration"] = iteration
        if parent_run_id is not UNSET:
            field_dict["parent_run_id"] = parent_run_id
        if pid is not UNSET:
            field_dict["pid"] = pid
        if previous_run_id is not UNSET:
            field_dict["previous_run_id"] = previous_run_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        agent = d.pop("agent")

        input_tokens = d.pop("input_tokens")

        output_tokens = d.pop("output_tokens")

        run_id = d.pop("run_id")

        start_time = d.pop("start_time")

        def _parse_cost_usd(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cost_usd = _parse_cost_usd(d.pop("cost_usd", UNSET))

        def _parse_end_time(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        end_time = _parse_end_time(d.pop("end_time", UNSET))

        def _parse_ended(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        ended = _parse_ended(d.pop("ended", UNSET))

        def _parse_exit_code(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        exit_code = _parse_exit_code(d.pop("exit_code", UNSET))

        def _parse_iteration(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        iteration = _parse_iteration(d.pop("iteration", UNSET))

        def _parse_parent_run_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        parent_run_id = _parse_parent_run_id(d.pop("parent_run_id", UNSET))

        def _parse_pid(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pid = _parse_pid(d.pop("pid", UNSET))

        def _parse_previous_run_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        previous_run_id = _parse_previous_run_id(d.pop("previous_run_id", UNSET))

        agent_process_info = cls(
            agent=agent,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            run_id=run_id,
            start_time=start_time,
            cost_usd=cost_usd,
            end_time=end_time,
            ended=ended,
            exit_code=exit_code,
            iteration=iteration,
            parent_run_id=parent_run_id,
            pid=pid,
            previous_run_id=previous_run_id,
        )

        agent_process_info.additional_properties = d
        return agent_process_info

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
