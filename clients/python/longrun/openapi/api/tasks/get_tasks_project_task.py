from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.task_view import TaskView
from ...types import Response


def _get_kwargs(
    project: str,
    task: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/tasks/{project}/{task}".format(
            project=quote(str(project), safe=""),
            task=quote(str(task), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | TaskView | None:
    if response.status_code == 200:
        response_200 = TaskView.from_dict(response.json())

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
) -> Response[Problem | TaskView]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    project: str,
    task: str,
    *,
    client: AuthenticatedClient | Client,
) -> Response[Problem | TaskView]:
    """One terminal task: its processes, message bus, TASK.md, TASK_STATE.md, output and live tail

     A task `longrun task` started: its summary, TASK.md, and its folder as an agent run's is shown (the
    chain of agent processes with the children each delegated to, the last 200 bus messages,
    TASK_STATE.md, the newest root's output and the live tail). A task that does not exist, or that the
    caller may not see, is a 404.

    Args:
        project (str):
        task (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | TaskView]
    """

    kwargs = _get_kwargs(
        project=project,
        task=task,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    project: str,
    task: str,
    *,
    client: AuthenticatedClient | Client,
) -> Problem | TaskView | None:
    """One terminal task: its processes, message bus, TASK.md, TASK_STATE.md, output and live tail

     A task `longrun task` started: its summary, TASK.md, and its folder as an agent run's is shown (the
    chain of agent processes with the children each delegated to, the last 200 bus messages,
    TASK_STATE.md, the newest root's output and the live tail). A task that does not exist, or that the
    caller may not see, is a 404.

    Args:
        project (str):
        task (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | TaskView
    """

    return sync_detailed(
        project=project,
        task=task,
        client=client,
    ).parsed


async def asyncio_detailed(
    project: str,
    task: str,
    *,
    client: AuthenticatedClient | Client,
) -> Response[Problem | TaskView]:
    """One terminal task: its processes, message bus, TASK.md, TASK_STATE.md, output and live tail

     A task `longrun task` started: its summary, TASK.md, and its folder as an agent run's is shown (the
    chain of agent processes with the children each delegated to, the last 200 bus messages,
    TASK_STATE.md, the newest root's output and the live tail). A task that does not exist, or that the
    caller may not see, is a 404.

    Args:
        project (str):
        task (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | TaskView]
    """

    kwargs = _get_kwargs(
        project=project,
        task=task,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    project: str,
    task: str,
    *,
    client: AuthenticatedClient | Client,
) -> Problem | TaskView | None:
    """One terminal task: its processes, message bus, TASK.md, TASK_STATE.md, output and live tail

     A task `longrun task` started: its summary, TASK.md, and its folder as an agent run's is shown (the
    chain of agent processes with the children each delegated to, the last 200 bus messages,
    TASK_STATE.md, the newest root's output and the live tail). A task that does not exist, or that the
    caller may not see, is a 404.

    Args:
        project (str):
        task (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | TaskView
    """

    return (
        await asyncio_detailed(
            project=project,
            task=task,
            client=client,
        )
    ).parsed
