from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.collection_distribution import CollectionDistribution
from ...models.job import Job
from ...models.problem import Problem
from typing import cast



def _get_kwargs(
    id: str,
    collection: str,
    *,
    body: CollectionDistribution,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/admin/tenants/{id}/collections/{collection}".format(id=quote(str(id), safe=""),collection=quote(str(collection), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> CollectionDistribution | Job | Problem | None:
    if response.status_code == 200:
        response_200 = CollectionDistribution.from_dict(response.json())



        return response_200

    if response.status_code == 202:
        response_202 = Job.from_dict(response.json())



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

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())



        return response_404

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

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())



        return response_422

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[CollectionDistribution | Job | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    collection: str,
    *,
    client: AuthenticatedClient,
    body: CollectionDistribution,

) -> Response[CollectionDistribution | Job | Problem]:
    """ Set a collection's distribution. A collection that holds no record yet changes it at once
    (200, in effect on every instance: each shard's fence moves to the new map epoch), and so
    does a non-empty `range` collection whose keys all stay on their shard (bounds added or
    removed; keys change shard with `.../split`). A non-empty collection changing between
    `tenant` and `hash` or `range` moves its records in a `collection.redistribute` job while
    traffic flows, with a tenant move's guarantees (copy, catch up, the old layout alone fenced,
    last delta, the two layouts compared by checksum, new distribution with a new epoch, old
    rows removed after `storage.moves.cleanup_grace`): 202, follow it at `/v1/admin/jobs/{id}`.
    Its writes during the cut-over wait for the new layout (at most
    `storage.moves.cutover_wait`, then 503 `tenant_moving` with `Retry-After`). A non-empty
    collection goes between `hash` and `range` by way of `tenant` (409
    `distribution_refused` otherwise). One job per tenant at a time, and none while a rebalance
    runs if `hash` is a side (409 `job_conflict`). Range bounds must name active shards.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        id (str):
        collection (str):
        body (CollectionDistribution): A collection's distribution.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CollectionDistribution | Job | Problem]
     """


    kwargs = _get_kwargs(
        id=id,
collection=collection,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    id: str,
    collection: str,
    *,
    client: AuthenticatedClient,
    body: CollectionDistribution,

) -> CollectionDistribution | Job | Problem | None:
    """ Set a collection's distribution. A collection that holds no record yet changes it at once
    (200, in effect on every instance: each shard's fence moves to the new map epoch), and so
    does a non-empty `range` collection whose keys all stay on their shard (bounds added or
    removed; keys change shard with `.../split`). A non-empty collection changing between
    `tenant` and `hash` or `range` moves its records in a `collection.redistribute` job while
    traffic flows, with a tenant move's guarantees (copy, catch up, the old layout alone fenced,
    last delta, the two layouts compared by checksum, new distribution with a new epoch, old
    rows removed after `storage.moves.cleanup_grace`): 202, follow it at `/v1/admin/jobs/{id}`.
    Its writes during the cut-over wait for the new layout (at most
    `storage.moves.cutover_wait`, then 503 `tenant_moving` with `Retry-After`). A non-empty
    collection goes between `hash` and `range` by way of `tenant` (409
    `distribution_refused` otherwise). One job per tenant at a time, and none while a rebalance
    runs if `hash` is a side (409 `job_conflict`). Range bounds must name active shards.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        id (str):
        collection (str):
        body (CollectionDistribution): A collection's distribution.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CollectionDistribution | Job | Problem
     """


    return sync_detailed(
        id=id,
collection=collection,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    id: str,
    collection: str,
    *,
    client: AuthenticatedClient,
    body: CollectionDistribution,

) -> Response[CollectionDistribution | Job | Problem]:
    """ Set a collection's distribution. A collection that holds no record yet changes it at once
    (200, in effect on every instance: each shard's fence moves to the new map epoch), and so
    does a non-empty `range` collection whose keys all stay on their shard (bounds added or
    removed; keys change shard with `.../split`). A non-empty collection changing between
    `tenant` and `hash` or `range` moves its records in a `collection.redistribute` job while
    traffic flows, with a tenant move's guarantees (copy, catch up, the old layout alone fenced,
    last delta, the two layouts compared by checksum, new distribution with a new epoch, old
    rows removed after `storage.moves.cleanup_grace`): 202, follow it at `/v1/admin/jobs/{id}`.
    Its writes during the cut-over wait for the new layout (at most
    `storage.moves.cutover_wait`, then 503 `tenant_moving` with `Retry-After`). A non-empty
    collection goes between `hash` and `range` by way of `tenant` (409
    `distribution_refused` otherwise). One job per tenant at a time, and none while a rebalance
    runs if `hash` is a side (409 `job_conflict`). Range bounds must name active shards.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        id (str):
        collection (str):
        body (CollectionDistribution): A collection's distribution.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[CollectionDistribution | Job | Problem]
     """


    kwargs = _get_kwargs(
        id=id,
collection=collection,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    id: str,
    collection: str,
    *,
    client: AuthenticatedClient,
    body: CollectionDistribution,

) -> CollectionDistribution | Job | Problem | None:
    """ Set a collection's distribution. A collection that holds no record yet changes it at once
    (200, in effect on every instance: each shard's fence moves to the new map epoch), and so
    does a non-empty `range` collection whose keys all stay on their shard (bounds added or
    removed; keys change shard with `.../split`). A non-empty collection changing between
    `tenant` and `hash` or `range` moves its records in a `collection.redistribute` job while
    traffic flows, with a tenant move's guarantees (copy, catch up, the old layout alone fenced,
    last delta, the two layouts compared by checksum, new distribution with a new epoch, old
    rows removed after `storage.moves.cleanup_grace`): 202, follow it at `/v1/admin/jobs/{id}`.
    Its writes during the cut-over wait for the new layout (at most
    `storage.moves.cutover_wait`, then 503 `tenant_moving` with `Retry-After`). A non-empty
    collection goes between `hash` and `range` by way of `tenant` (409
    `distribution_refused` otherwise). One job per tenant at a time, and none while a rebalance
    runs if `hash` is a side (409 `job_conflict`). Range bounds must name active shards.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        id (str):
        collection (str):
        body (CollectionDistribution): A collection's distribution.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        CollectionDistribution | Job | Problem
     """


    return (await asyncio_detailed(
        id=id,
collection=collection,
client=client,
body=body,

    )).parsed
