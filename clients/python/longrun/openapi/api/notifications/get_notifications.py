from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.get_notifications_response_200 import GetNotificationsResponse200
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["limit"] = limit

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/notifications",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> GetNotificationsResponse200 | Problem | None:
    if response.status_code == 200:
        response_200 = GetNotificationsResponse200.from_dict(response.json())

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
) -> Response[GetNotificationsResponse200 | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[GetNotificationsResponse200 | Problem]:
    """Your notification inbox

     Your inbox: one notification per run outcome (ended, or waiting on you), newest first, with its
    title, message, deep link and the run's figures; paged like runs, with the unread count of the page.

    Args:
        limit (int | Unset): Page size, 1 to 200 (default 50)
        cursor (str | Unset): `next_cursor` of the previous page, unchanged

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[GetNotificationsResponse200 | Problem]
    """

    kwargs = _get_kwargs(
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> GetNotificationsResponse200 | Problem | None:
    """Your notification inbox

     Your inbox: one notification per run outcome (ended, or waiting on you), newest first, with its
    title, message, deep link and the run's figures; paged like runs, with the unread count of the page.

    Args:
        limit (int | Unset): Page size, 1 to 200 (default 50)
        cursor (str | Unset): `next_cursor` of the previous page, unchanged

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        GetNotificationsResponse200 | Problem
    """

    return sync_detailed(
        client=client,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[GetNotificationsResponse200 | Problem]:
    """Your notification inbox

     Your inbox: one notification per run outcome (ended, or waiting on you), newest first, with its
    title, message, deep link and the run's figures; paged like runs, with the unread count of the page.

    Args:
        limit (int | Unset): Page size, 1 to 200 (default 50)
        cursor (str | Unset): `next_cursor` of the previous page, unchanged

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[GetNotificationsResponse200 | Problem]
    """

    kwargs = _get_kwargs(
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> GetNotificationsResponse200 | Problem | None:
    """Your notification inbox

     Your inbox: one notification per run outcome (ended, or waiting on you), newest first, with its
    title, message, deep link and the run's figures; paged like runs, with the unread count of the page.

    Args:
        limit (int | Unset): Page size, 1 to 200 (default 50)
        cursor (str | Unset): `next_cursor` of the previous page, unchanged

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        GetNotificationsResponse200 | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
