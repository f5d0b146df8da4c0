from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.get_tasks_response_200 import GetTasksResponse200
from ...models.problem import Problem
from ...types import Response


def _get_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/tasks",
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> GetTasksResponse200 | Problem | None:
    if response.status_code == 200:
        response_200 = GetTasksResponse200.from_dict(response.json())

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
) -> Response[GetTasksResponse200 | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
) -> Response[GetTasksResponse200 | Problem]:
    """The tasks `longrun task` started on the server's machine, most recently active first

     The tasks a terminal started with `longrun task` under the server's projects root
    (`projects_root/<project>/<task>/`), the most recently active first (at most 500): status, title,
    process count, backend and spend. They are the machine user's: only the user the server names for
    them (`LONGRUN_TASKS_USER`; `local` on a server without `LONGRUN_TOKENS`) sees any; everyone else
    gets an empty list. Read-only: agent runs are under `/v1/runs`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[GetTasksResponse200 | Problem]
    """

    kwargs = _get_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
) -> GetTasksResponse200 | Problem | None:
    """The tasks `longrun task` started on the server's machine, most recently active first

     The tasks a terminal started with `longrun task` under the server's projects root
    (`projects_root/<project>/<task>/`), the most recently active first (at most 500): status, title,
    process count, backend and spend. They are the machine user's: only the user the server names for
    them (`LONGRUN_TASKS_USER`; `local` on a server without `LONGRUN_TOKENS`) sees any; everyone else
    gets an empty list. Read-only: agent runs are under `/v1/runs`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        GetTasksResponse200 | Problem
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
) -> Response[GetTasksResponse200 | Problem]:
    """The tasks `longrun task` started on the server's machine, most recently active first

     The tasks a terminal started with `longrun task` under the server's projects root
    (`projects_root/<project>/<task>/`), the most recently active first (at most 500): status, title,
    process count, backend and spend. They are the machine user's: only the user the server names for
    them (`LONGRUN_TASKS_USER`; `local` on a server without `LONGRUN_TOKENS`) sees any; everyone else
    gets an empty list. Read-only: agent runs are under `/v1/runs`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[GetTasksResponse200 | Problem]
    """

    kwargs = _get_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
) -> GetTasksResponse200 | Problem | None:
    """The tasks `longrun task` started on the server's machine, most recently active first

     The tasks a terminal started with `longrun task` under the server's projects root
    (`projects_root/<project>/<task>/`), the most recently active first (at most 500): status, title,
    process count, backend and spend. They are the machine user's: only the user the server names for
    them (`LONGRUN_TASKS_USER`; `local` on a server without `LONGRUN_TOKENS`) sees any; everyone else
    gets an empty list. Read-only: agent runs are under `/v1/runs`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        GetTasksResponse200 | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
