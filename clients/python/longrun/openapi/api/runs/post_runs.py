from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.run import Run
from ...models.run_template import RunTemplate
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: RunTemplate,
    idempotency_key: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/runs",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Run | None:
    if response.status_code == 201:
        response_201 = Run.from_dict(response.json())

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
) -> Response[Problem | Run]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: RunTemplate,
    idempotency_key: str | Unset = UNSET,
) -> Response[Problem | Run]:
    """Start a run

     Creates a run from an objective, budgets, a model and a permission mode, and queues its first
    iteration. The body is checked strictly: an unknown field (a misspelt budget), a blank objective or
    a budget out of range is a 422 naming the field. Send an `Idempotency-Key` to make a retried create
    safe. A user over their active-run limit gets a 429.

    Args:
        idempotency_key (str | Unset):
        body (RunTemplate): A run to start: the body of `POST /v1/runs`, and what a schedule
            starts at each occurrence.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Run]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: RunTemplate,
    idempotency_key: str | Unset = UNSET,
) -> Problem | Run | None:
    """Start a run

     Creates a run from an objective, budgets, a model and a permission mode, and queues its first
    iteration. The body is checked strictly: an unknown field (a misspelt budget), a blank objective or
    a budget out of range is a 422 naming the field. Send an `Idempotency-Key` to make a retried create
    safe. A user over their active-run limit gets a 429.

    Args:
        idempotency_key (str | Unset):
        body (RunTemplate): A run to start: the body of `POST /v1/runs`, and what a schedule
            starts at each occurrence.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Run
    """

    return sync_detailed(
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: RunTemplate,
    idempotency_key: str | Unset = UNSET,
) -> Response[Problem | Run]:
    """Start a run

     Creates a run from an objective, budgets, a model and a permission mode, and queues its first
    iteration. The body is checked strictly: an unknown field (a misspelt budget), a blank objective or
    a budget out of range is a 422 naming the field. Send an `Idempotency-Key` to make a retried create
    safe. A user over their active-run limit gets a 429.

    Args:
        idempotency_key (str | Unset):
        body (RunTemplate): A run to start: the body of `POST /v1/runs`, and what a schedule
            starts at each occurrence.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Run]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: RunTemplate,
    idempotency_key: str | Unset = UNSET,
) -> Problem | Run | None:
    """Start a run

     Creates a run from an objective, budgets, a model and a permission mode, and queues its first
    iteration. The body is checked strictly: an unknown field (a misspelt budget), a blank objective or
    a budget out of range is a 422 naming the field. Send an `Idempotency-Key` to make a retried create
    safe. A user over their active-run limit gets a 429.

    Args:
        idempotency_key (str | Unset):
        body (RunTemplate): A run to start: the body of `POST /v1/runs`, and what a schedule
            starts at each occurrence.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Run
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
