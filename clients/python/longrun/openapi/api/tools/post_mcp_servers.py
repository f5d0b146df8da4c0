from http import HTTPStatus
from typing import Any, cast

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.mcp_server_view import McpServerView
from ...models.problem import Problem
from ...models.register_mcp_server import RegisterMcpServer
from ...types import Response


def _get_kwargs(
    *,
    body: RegisterMcpServer,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/mcp-servers",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | McpServerView | Problem | None:
    if response.status_code == 200:
        response_200 = cast(Any, None)
        return response_200

    if response.status_code == 201:
        response_201 = McpServerView.from_dict(response.json())

        return response_201

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
) -> Response[Any | McpServerView | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: RegisterMcpServer,
) -> Response[Any | McpServerView | Problem]:
    """Register (or replace) an MCP server whose tools your runs may call

     Registers a Model Context Protocol server (streamable HTTP) whose tools your runs may call as
    `name.tool`, or replaces the one of that name. At most 10; the secret, when given, is sent as a
    bearer token and never returned.

    Args:
        body (RegisterMcpServer):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | McpServerView | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: RegisterMcpServer,
) -> Any | McpServerView | Problem | None:
    """Register (or replace) an MCP server whose tools your runs may call

     Registers a Model Context Protocol server (streamable HTTP) whose tools your runs may call as
    `name.tool`, or replaces the one of that name. At most 10; the secret, when given, is sent as a
    bearer token and never returned.

    Args:
        body (RegisterMcpServer):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | McpServerView | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: RegisterMcpServer,
) -> Response[Any | McpServerView | Problem]:
    """Register (or replace) an MCP server whose tools your runs may call

     Registers a Model Context Protocol server (streamable HTTP) whose tools your runs may call as
    `name.tool`, or replaces the one of that name. At most 10; the secret, when given, is sent as a
    bearer token and never returned.

    Args:
        body (RegisterMcpServer):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | McpServerView | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: RegisterMcpServer,
) -> Any | McpServerView | Problem | None:
    """Register (or replace) an MCP server whose tools your runs may call

     Registers a Model Context Protocol server (streamable HTTP) whose tools your runs may call as
    `name.tool`, or replaces the one of that name. At most 10; the secret, when given, is sent as a
    bearer token and never returned.

    Args:
        body (RegisterMcpServer):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | McpServerView | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
