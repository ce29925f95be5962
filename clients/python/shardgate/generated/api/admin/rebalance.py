from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.problem import Problem
from ...models.rebalance_answer import RebalanceAnswer
from ...models.rebalance_request import RebalanceRequest
from typing import cast



def _get_kwargs(
    *,
    body: RebalanceRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/admin/vshards/rebalance",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | RebalanceAnswer | None:
    if response.status_code == 200:
        response_200 = RebalanceAnswer.from_dict(response.json())



        return response_200

    if response.status_code == 202:
        response_202 = RebalanceAnswer.from_dict(response.json())



        return response_202

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())



        return response_403

    if response.status_code == 408:
        response_408 = Problem.from_dict(response.json())



        return response_408

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())



        return response_409

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())



        return response_413

    if response.status_code == 414:
        response_414 = Problem.from_dict(response.json())



        return response_414

    if response.status_code == 415:
        response_415 = Problem.from_dict(response.json())



        return response_415

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())



        return response_429

    if response.status_code == 431:
        response_431 = Problem.from_dict(response.json())



        return response_431

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())



        return response_503

    if response.status_code == 504:
        response_504 = Problem.from_dict(response.json())



        return response_504

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | RebalanceAnswer]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: RebalanceRequest,

) -> Response[Problem | RebalanceAnswer]:
    """ Plan (`dry_run`) or carry out a rebalance of the vshards over the active shards: a newly
    registered shard takes its share this way. Each moved vshard's data (the records and blobs of
    the unpinned tenants it places, and the index entries it places) moves as a tenant does, with
    the same checksums and a cut-over that fences only that vshard; at most `parallel` move at
    once. One rebalance (or drain) runs at a time (409 `job_conflict`).

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        body (RebalanceRequest): Body of `POST /v1/admin/vshards/rebalance` and `POST
            /v1/admin/shards/{id}/drain`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RebalanceAnswer]
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
    client: AuthenticatedClient,
    body: RebalanceRequest,

) -> Problem | RebalanceAnswer | None:
    """ Plan (`dry_run`) or carry out a rebalance of the vshards over the active shards: a newly
    registered shard takes its share this way. Each moved vshard's data (the records and blobs of
    the unpinned tenants it places, and the index entries it places) moves as a tenant does, with
    the same checksums and a cut-over that fences only that vshard; at most `parallel` move at
    once. One rebalance (or drain) runs at a time (409 `job_conflict`).

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        body (RebalanceRequest): Body of `POST /v1/admin/vshards/rebalance` and `POST
            /v1/admin/shards/{id}/drain`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RebalanceAnswer
     """


    return sync_detailed(
        client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: RebalanceRequest,

) -> Response[Problem | RebalanceAnswer]:
    """ Plan (`dry_run`) or carry out a rebalance of the vshards over the active shards: a newly
    registered shard takes its share this way. Each moved vshard's data (the records and blobs of
    the unpinned tenants it places, and the index entries it places) moves as a tenant does, with
    the same checksums and a cut-over that fences only that vshard; at most `parallel` move at
    once. One rebalance (or drain) runs at a time (409 `job_conflict`).

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        body (RebalanceRequest): Body of `POST /v1/admin/vshards/rebalance` and `POST
            /v1/admin/shards/{id}/drain`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RebalanceAnswer]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    body: RebalanceRequest,

) -> Problem | RebalanceAnswer | None:
    """ Plan (`dry_run`) or carry out a rebalance of the vshards over the active shards: a newly
    registered shard takes its share this way. Each moved vshard's data (the records and blobs of
    the unpinned tenants it places, and the index entries it places) moves as a tenant does, with
    the same checksums and a cut-over that fences only that vshard; at most `parallel` move at
    once. One rebalance (or drain) runs at a time (409 `job_conflict`).

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        body (RebalanceRequest): Body of `POST /v1/admin/vshards/rebalance` and `POST
            /v1/admin/shards/{id}/drain`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RebalanceAnswer
     """


    return (await asyncio_detailed(
        client=client,
body=body,

    )).parsed
