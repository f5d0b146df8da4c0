from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    project: str,
    task: str,
    *,
    after: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["after"] = after

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/tasks/{project}/{task}/stream".format(
            project=quote(str(project), safe=""),
            task=quote(str(task), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | Problem | None:
    if response.status_code == 200:
        response_200 = cast(Any, None)
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
) -> Response[Any | Problem]:
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
    after: int | Unset = UNSET,
) -> Response[Any | Problem]:
    """A terminal task's message bus as server-sent events; resumes from Last-Event-ID

     The task's bus as server-sent events (`text/event-stream`): each `data:` one message as JSON (a
    `BusMessage`), its seq the SSE id and its type the event name. A reconnect with `Last-Event-ID` (or
    `after`) resumes after that seq; the stream ends once nothing of the task runs and every message was
    sent.

    Args:
        project (str):
        task (str):
        after (int | Unset): Only messages after this seq

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        project=project,
        task=task,
        after=after,
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
    after: int | Unset = UNSET,
) -> Any | Problem | None:
    """A terminal task's message bus as server-sent events; resumes from Last-Event-ID

     The task's bus as server-sent events (`text/event-stream`): each `data:` one message as JSON (a
    `BusMessage`), its seq the SSE id and its type the event name. A reconnect with `Last-Event-ID` (or
    `after`) resumes after that seq; the stream ends once nothing of the task runs and every message was
    sent.

    Args:
        project (str):
        task (str):
        after (int | Unset): Only messages after this seq

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        project=project,
        task=task,
        client=client,
        after=after,
    ).parsed


async def asyncio_detailed(
    project: str,
    task: str,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
) -> Response[Any | Problem]:
    """A terminal task's message bus as server-sent events; resumes from Last-Event-ID

     The task's bus as server-sent events (`text/event-stream`): each `data:` one message as JSON (a
    `BusMessage`), its seq the SSE id and its type the event name. A reconnect with `Last-Event-ID` (or
    `after`) resumes after that seq; the stream ends once nothing of the task runs and every message was
    sent.

    Args:
        project (str):
        task (str):
        after (int | Unset): Only messages after this seq

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        project=project,
        task=task,
        after=after,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    project: str,
    task: str,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
) -> Any | Problem | None:
    """A terminal task's message bus as server-sent events; resumes from Last-Event-ID

     The task's bus as server-sent events (`text/event-stream`): each `data:` one message as JSON (a
    `BusMessage`), its seq the SSE id and its type the event name. A reconnect with `Last-Event-ID` (or
    `after`) resumes after that seq; the stream ends once nothing of the task runs and every message was
    sent.

    Args:
        project (str):
        task (str):
        after (int | Unset): Only messages after this seq

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            project=project,
            task=task,
            client=client,
            after=after,
        )
    ).parsed
