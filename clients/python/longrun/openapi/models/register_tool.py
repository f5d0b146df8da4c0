from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from typing_extensions import Self

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.register_tool_parameters import RegisterToolParameters


T = TypeVar("T", bound="RegisterTool")


@_attrs_define
class RegisterTool:
    """
    Attributes:
        description (str): What the tool does, for the planner (not blank).
        name (str): `[a-z][a-z0-9_]*`, at most 48 characters, not a built-in tool's name.
        parameters (RegisterToolParameters): JSON Schema (type object) of the arguments, enforced before every call.
        secret (str): HMAC-SHA256 key for the `x-longrun-signature` header; at least 16 characters.
        url (str):
        write (bool | Unset): Whether the tool changes something (held for approval under `per_write`). Default true.
            Default: True.
    """

    description: str
    name: str
    parameters: RegisterToolParameters
    secret: str
    url: str
    write: bool | Unset = True

    def to_dict(self) -> dict[str, Any]:
        description = self.description

        name = self.name

        parameters = self.parameters.to_dict()

        secret = self.secret

        url = self.url

        write = self.write

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "description": description,
                "name": name,
                "parameters": parameters,
                "secret": secret,
                "url": url,
            }
        )
        if write is not UNSET:
            field_dict["write"] = write

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.register_tool_parameters import RegisterToolParameters

        d = dict(src_dict)
        description = d.pop("description")

        name = d.pop("name")

        parameters = RegisterToolParameters.from_dict(d.pop("parameters"))

        secret = d.pop("secret")

        url = d.pop("url")

        write = d.pop("write", UNSET)

        register_tool = cls(
            description=description,
            name=name,
            parameters=parameters,
            secret=secret,
            url=url,
            write=write,
        )

        return register_tool
