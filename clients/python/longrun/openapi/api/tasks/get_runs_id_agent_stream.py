from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: str,
    *,
    after: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["after"] = after

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/runs/{id}/agent/stream".format(
            id=quote(str(id), safe=""),
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
    id: str,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
) -> Response[Any | Problem]:
    """An agent run's message bus as server-sent events; resumes from Last-Event-ID

     The agent run's bus (`longrun bus`) as server-sent events (`text/event-stream`): each `data:` one
    message as JSON (a `BusMessage`), its seq the SSE id and its type the event name. A reconnect with
    `Last-Event-ID` (or `after`) resumes after that seq; the stream ends once the run settles and every
    message was sent. Any other run is a 404.

    Args:
        id (str):
        after (int | Unset): Only messages after this seq

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        after=after,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
) -> Any | Problem | None:
    """An agent run's message bus as server-sent events; resumes from Last-Event-ID

     The agent run's bus (`longrun bus`) as server-sent events (`text/event-stream`): each `data:` one
    message as JSON (a `BusMessage`), its seq the SSE id and its type the event name. A reconnect with
    `Last-Event-ID` (or `after`) resumes after that seq; the stream ends once the run settles and every
    message was sent. Any other run is a 404.

    Args:
        id (str):
        after (int | Unset): Only messages after this seq

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        id=id,
        client=client,
        after=after,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
) -> Response[Any | Problem]:
    """An agent run's message bus as server-sent events; resumes from Last-Event-ID

     The agent run's bus (`longrun bus`) as server-sent events (`text/event-stream`): each `data:` one
    message as JSON (a `BusMessage`), its seq the SSE id and its type the event name. A reconnect with
    `Last-Event-ID` (or `after`) resumes after that seq; the stream ends once the run settles and every
    message was sent. Any other run is a 404.

    Args:
        id (str):
        after (int | Unset): Only messages after this seq

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        after=after,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
) -> Any | Problem | None:
    """An agent run's message bus as server-sent events; resumes from Last-Event-ID

     The agent run's bus (`longrun bus`) as server-sent events (`text/event-stream`): each `data:` one
    message as JSON (a `BusMessage`), its seq the SSE id and its type the event name. A reconnect with
    `Last-Event-ID` (or `after`) resumes after that seq; the stream ends once the run settles and every
    message was sent. Any other run is a 404.

    Args:
        id (str):
        after (int | Unset): Only messages after this seq

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            after=after,
        )
    ).parsed
