from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.get_runs_id_scratchpad_response_200 import GetRunsIdScratchpadResponse200
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: str,
    *,
    last: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["last"] = last

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/runs/{id}/scratchpad".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> GetRunsIdScratchpadResponse200 | Problem | None:
    if response.status_code == 200:
        response_200 = GetRunsIdScratchpadResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[GetRunsIdScratchpadResponse200 | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    last: int | Unset = UNSET,
) -> Response[GetRunsIdScratchpadResponse200 | Problem]:
    """Last scratchpad entries (?last=N)

     The run's scratchpad, the notes each iteration leaves for the next (what was done, learned and
    planned): the last `last` entries, oldest first.

    Args:
        id (str):
        last (int | Unset): The last N entries, 1 to 1000 (default 3)

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[GetRunsIdScratchpadResponse200 | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        last=last,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    last: int | Unset = UNSET,
) -> GetRunsIdScratchpadResponse200 | Problem | None:
    """Last scratchpad entries (?last=N)

     The run's scratchpad, the notes each iteration leaves for the next (what was done, learned and
    planned): the last `last` entries, oldest first.

    Args:
        id (str):
        last (int | Unset): The last N entries, 1 to 1000 (default 3)

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        GetRunsIdScratchpadResponse200 | Problem
    """

    return sync_detailed(
        id=id,
        client=client,
        last=last,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    last: int | Unset = UNSET,
) -> Response[GetRunsIdScratchpadResponse200 | Problem]:
    """Last scratchpad entries (?last=N)

     The run's scratchpad, the notes each iteration leaves for the next (what was done, learned and
    planned): the last `last` entries, oldest first.

    Args:
        id (str):
        last (int | Unset): The last N entries, 1 to 1000 (default 3)

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[GetRunsIdScratchpadResponse200 | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        last=last,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    last: int | Unset = UNSET,
) -> GetRunsIdScratchpadResponse200 | Problem | None:
    """Last scratchpad entries (?last=N)

     The run's scratchpad, the notes each iteration leaves for the next (what was done, learned and
    planned): the last `last` entries, oldest first.

    Args:
        id (str):
        last (int | Unset): The last N entries, 1 to 1000 (default 3)

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        GetRunsIdScratchpadResponse200 | Problem
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            last=last,
        )
    ).parsed
