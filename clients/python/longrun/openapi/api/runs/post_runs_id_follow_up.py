from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.follow_up_body import FollowUpBody
from ...models.problem import Problem
from ...models.run import Run
from ...types import Response


def _get_kwargs(
    id: str,
    *,
    body: FollowUpBody,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/runs/{id}/follow-up".format(
            id=quote(str(id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Run | None:
    if response.status_code == 200:
        response_200 = Run.from_dict(response.json())

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
) -> Response[Problem | Run]:
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
    body: FollowUpBody,
) -> Response[Problem | Run]:
    """Ask an ended run a follow-up question; it runs again and writes a new report

     Asks a run that ended completed, stopped or failed a follow-up question: it is queued again on the
    budgets it has left (or those raised in the body), works on the question with its workspace, and
    writes a new report that supersedes the last.

    Args:
        id (str):
        body (FollowUpBody): A follow-up question to an ended run (completed, stopped or failed):
            the run is queued
            again and its planner answers the question. It runs on the budgets the run has left;
            `budgets` raises them (needed when none is left).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Run]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    body: FollowUpBody,
) -> Problem | Run | None:
    """Ask an ended run a follow-up question; it runs again and writes a new report

     Asks a run that ended completed, stopped or failed a follow-up question: it is queued again on the
    budgets it has left (or those raised in the body), works on the question with its workspace, and
    writes a new report that supersedes the last.

    Args:
        id (str):
        body (FollowUpBody): A follow-up question to an ended run (completed, stopped or failed):
            the run is queued
            again and its planner answers the question. It runs on the budgets the run has left;
            `budgets` raises them (needed when none is left).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Run
    """

    return sync_detailed(
        id=id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    body: FollowUpBody,
) -> Response[Problem | Run]:
    """Ask an ended run a follow-up question; it runs again and writes a new report

     Asks a run that ended completed, stopped or failed a follow-up question: it is queued again on the
    budgets it has left (or those raised in the body), works on the question with its workspace, and
    writes a new report that supersedes the last.

    Args:
        id (str):
        body (FollowUpBody): A follow-up question to an ended run (completed, stopped or failed):
            the run is queued
            again and its planner answers the question. It runs on the budgets the run has left;
            `budgets` raises them (needed when none is left).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Run]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient | Client,
    body: FollowUpBody,
) -> Problem | Run | None:
    """Ask an ended run a follow-up question; it runs again and writes a new report

     Asks a run that ended completed, stopped or failed a follow-up question: it is queued again on the
    budgets it has left (or those raised in the body), works on the question with its workspace, and
    writes a new report that supersedes the last.

    Args:
        id (str):
        body (FollowUpBody): A follow-up question to an ended run (completed, stopped or failed):
            the run is queued
            again and its planner answers the question. It runs on the budgets the run has left;
            `budgets` raises them (needed when none is left).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Run
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
        )
    ).parsed
