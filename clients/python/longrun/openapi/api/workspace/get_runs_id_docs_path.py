from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.doc import Doc
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    id: str,
    path: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/runs/{id}/docs/{path}".format(
            id=quote(str(id), safe=""),
            path=quote(str(path), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Doc | Problem | None:
    if response.status_code == 200:
        response_200 = Doc.from_dict(response.json())

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
) -> Response[Doc | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    path: str,
    *,
    client: AuthenticatedClient | Client,
) -> Response[Doc | Problem]:
    """One workspace document

     One document of the run's workspace by its path (`/`-separated, e.g. `notes/green.md`): its content,
    title, tags, version, the iterations that wrote it and where what it says came from (`sources`). A
    path naming no document is a 404.

    Args:
        id (str):
        path (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Doc | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        path=path,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    path: str,
    *,
    client: AuthenticatedClient | Client,
) -> Doc | Problem | None:
    """One workspace document

     One document of the run's workspace by its path (`/`-separated, e.g. `notes/green.md`): its content,
    title, tags, version, the iterations that wrote it and where what it says came from (`sources`). A
    path naming no document is a 404.

    Args:
        id (str):
        path (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Doc | Problem
    """

    return sync_detailed(
        id=id,
        path=path,
        client=client,
    ).parsed


async def asyncio_detailed(
    id: str,
    path: str,
    *,
    client: AuthenticatedClient | Client,
) -> Response[Doc | Problem]:
    """One workspace document

     One document of the run's workspace by its path (`/`-separated, e.g. `notes/green.md`): its content,
    title, tags, version, the iterations that wrote it and where what it says came from (`sources`). A
    path naming no document is a 404.

    Args:
        id (str):
        path (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Doc | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        path=path,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    path: str,
    *,
    client: AuthenticatedClient | Client,
) -> Doc | Problem | None:
    """One workspace document

     One document of the run's workspace by its path (`/`-separated, e.g. `notes/green.md`): its content,
    title, tags, version, the iterations that wrote it and where what it says came from (`sources`). A
    path naming no document is a 404.

    Args:
        id (str):
        path (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Doc | Problem
    """

    return (
        await asyncio_detailed(
            id=id,
            path=path,
            client=client,
        )
    ).parsed
