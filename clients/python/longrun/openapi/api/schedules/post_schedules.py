from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.create_schedule import CreateSchedule
from ...models.problem import Problem
from ...models.schedule import Schedule
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: CreateSchedule,
    idempotency_key: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/schedules",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Schedule | None:
    if response.status_code == 201:
        response_201 = Schedule.from_dict(response.json())

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
) -> Response[Problem | Schedule]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: CreateSchedule,
    idempotency_key: str | Unset = UNSET,
) -> Response[Problem | Schedule]:
    """Start a run on a cron schedule (UTC)

     Starts a run from the template at every occurrence of a five-field cron expression, in UTC. The
    template is checked like the body of `POST /v1/runs`; each occurrence starts at most one run and
    missed ones are not replayed. Send an `Idempotency-Key` to make a retried create safe.

    Args:
        idempotency_key (str | Unset):
        body (CreateSchedule):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Schedule]
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
    body: CreateSchedule,
    idempotency_key: str | Unset = UNSET,
) -> Problem | Schedule | None:
    """Start a run on a cron schedule (UTC)

     Starts a run from the template at every occurrence of a five-field cron expression, in UTC. The
    template is checked like the body of `POST /v1/runs`; each occurrence starts at most one run and
    missed ones are not replayed. Send an `Idempotency-Key` to make a retried create safe.

    Args:
        idempotency_key (str | Unset):
        body (CreateSchedule):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Schedule
    """

    return sync_detailed(
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: CreateSchedule,
    idempotency_key: str | Unset = UNSET,
) -> Response[Problem | Schedule]:
    """Start a run on a cron schedule (UTC)

     Starts a run from the template at every occurrence of a five-field cron expression, in UTC. The
    template is checked like the body of `POST /v1/runs`; each occurrence starts at most one run and
    missed ones are not replayed. Send an `Idempotency-Key` to make a retried create safe.

    Args:
        idempotency_key (str | Unset):
        body (CreateSchedule):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Schedule]
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
    body: CreateSchedule,
    idempotency_key: str | Unset = UNSET,
) -> Problem | Schedule | None:
    """Start a run on a cron schedule (UTC)

     Starts a run from the template at every occurrence of a five-field cron expression, in UTC. The
    template is checked like the body of `POST /v1/runs`; each occurrence starts at most one run and
    missed ones are not replayed. Send an `Idempotency-Key` to make a retried create safe.

    Args:
        idempotency_key (str | Unset):
        body (CreateSchedule):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Schedule
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
