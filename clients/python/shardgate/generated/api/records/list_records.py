from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.list_records_consistency import ListRecordsConsistency
from ...models.problem import Problem
from ...models.record_page import RecordPage
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    tenant: str,
    collection: str,
    *,
    prefix: str | Unset = UNSET,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    consistency: ListRecordsConsistency | Unset = UNSET,
    explain: bool | Unset = UNSET,
    x_shardgate_consistency: str | Unset = UNSET,
    x_shardgate_position: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(x_shardgate_consistency, Unset):
        headers["x-shardgate-consistency"] = x_shardgate_consistency

    if not isinstance(x_shardgate_position, Unset):
        headers["x-shardgate-position"] = x_shardgate_position



    

    params: dict[str, Any] = {}

    params["prefix"] = prefix

    params["start"] = start

    params["end"] = end

    params["limit"] = limit

    params["cursor"] = cursor

    json_consistency: str | Unset = UNSET
    if not isinstance(consistency, Unset):
        json_consistency = consistency.value

    params["consistency"] = json_consistency

    params["explain"] = explain


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/tenants/{tenant}/collections/{collection}/records".format(tenant=quote(str(tenant), safe=""),collection=quote(str(collection), safe=""),),
        "params": params,
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | RecordPage | None:
    if response.status_code == 200:
        response_200 = RecordPage.from_dict(response.json())



        return response_200

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

    if response.status_code == 414:
        response_414 = Problem.from_dict(response.json())



        return response_414

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | RecordPage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    tenant: str,
    collection: str,
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    consistency: ListRecordsConsistency | Unset = UNSET,
    explain: bool | Unset = UNSET,
    x_shardgate_consistency: str | Unset = UNSET,
    x_shardgate_position: str | Unset = UNSET,

) -> Response[Problem | RecordPage]:
    """ List a collection's records in key order.

     A collection distributed `tenant` is read on its tenant's home shard. A distributed one
    (`hash` or `range`) is read on each physical shard that may hold keys in the interval, once
    per shard and all at once, merged by key; a shard that fails or misses its deadline is named
    in `_shards` (or, with `consistency=strict`, the answer is 503).

    Args:
        tenant (str):
        collection (str):
        prefix (str | Unset):
        start (str | Unset):
        end (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):
        consistency (ListRecordsConsistency | Unset): How a listing of a distributed collection
            answers when a shard fails.
        explain (bool | Unset):
        x_shardgate_consistency (str | Unset):
        x_shardgate_position (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RecordPage]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
collection=collection,
prefix=prefix,
start=start,
end=end,
limit=limit,
cursor=cursor,
consistency=consistency,
explain=explain,
x_shardgate_consistency=x_shardgate_consistency,
x_shardgate_position=x_shardgate_position,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    tenant: str,
    collection: str,
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    consistency: ListRecordsConsistency | Unset = UNSET,
    explain: bool | Unset = UNSET,
    x_shardgate_consistency: str | Unset = UNSET,
    x_shardgate_position: str | Unset = UNSET,

) -> Problem | RecordPage | None:
    """ List a collection's records in key order.

     A collection distributed `tenant` is read on its tenant's home shard. A distributed one
    (`hash` or `range`) is read on each physical shard that may hold keys in the interval, once
    per shard and all at once, merged by key; a shard that fails or misses its deadline is named
    in `_shards` (or, with `consistency=strict`, the answer is 503).

    Args:
        tenant (str):
        collection (str):
        prefix (str | Unset):
        start (str | Unset):
        end (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):
        consistency (ListRecordsConsistency | Unset): How a listing of a distributed collection
            answers when a shard fails.
        explain (bool | Unset):
        x_shardgate_consistency (str | Unset):
        x_shardgate_position (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RecordPage
     """


    return sync_detailed(
        tenant=tenant,
collection=collection,
client=client,
prefix=prefix,
start=start,
end=end,
limit=limit,
cursor=cursor,
consistency=consistency,
explain=explain,
x_shardgate_consistency=x_shardgate_consistency,
x_shardgate_position=x_shardgate_position,

    ).parsed

async def asyncio_detailed(
    tenant: str,
    collection: str,
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    consistency: ListRecordsConsistency | Unset = UNSET,
    explain: bool | Unset = UNSET,
    x_shardgate_consistency: str | Unset = UNSET,
    x_shardgate_position: str | Unset = UNSET,

) -> Response[Problem | RecordPage]:
    """ List a collection's records in key order.

     A collection distributed `tenant` is read on its tenant's home shard. A distributed one
    (`hash` or `range`) is read on each physical shard that may hold keys in the interval, once
    per shard and all at once, merged by key; a shard that fails or misses its deadline is named
    in `_shards` (or, with `consistency=strict`, the answer is 503).

    Args:
        tenant (str):
        collection (str):
        prefix (str | Unset):
        start (str | Unset):
        end (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):
        consistency (ListRecordsConsistency | Unset): How a listing of a distributed collection
            answers when a shard fails.
        explain (bool | Unset):
        x_shardgate_consistency (str | Unset):
        x_shardgate_position (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RecordPage]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
collection=collection,
prefix=prefix,
start=start,
end=end,
limit=limit,
cursor=cursor,
consistency=consistency,
explain=explain,
x_shardgate_consistency=x_shardgate_consistency,
x_shardgate_position=x_shardgate_position,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    tenant: str,
    collection: str,
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    start: str | Unset = UNSET,
    end: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    consistency: ListRecordsConsistency | Unset = UNSET,
    explain: bool | Unset = UNSET,
    x_shardgate_consistency: str | Unset = UNSET,
    x_shardgate_position: str | Unset = UNSET,

) -> Problem | RecordPage | None:
    """ List a collection's records in key order.

     A collection distributed `tenant` is read on its tenant's home shard. A distributed one
    (`hash` or `range`) is read on each physical shard that may hold keys in the interval, once
    per shard and all at once, merged by key; a shard that fails or misses its deadline is named
    in `_shards` (or, with `consistency=strict`, the answer is 503).

    Args:
        tenant (str):
        collection (str):
        prefix (str | Unset):
        start (str | Unset):
        end (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):
        consistency (ListRecordsConsistency | Unset): How a listing of a distributed collection
            answers when a shard fails.
        explain (bool | Unset):
        x_shardgate_consistency (str | Unset):
        x_shardgate_position (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RecordPage
     """


    return (await asyncio_detailed(
        tenant=tenant,
collection=collection,
client=client,
prefix=prefix,
start=start,
end=end,
limit=limit,
cursor=cursor,
consistency=consistency,
explain=explain,
x_shardgate_consistency=x_shardgate_consistency,
x_shardgate_position=x_shardgate_position,

    )).parsed
