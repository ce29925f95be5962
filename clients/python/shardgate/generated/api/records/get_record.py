from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.problem import Problem
from ...models.record_envelope import RecordEnvelope
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    tenant: str,
    collection: str,
    key: str,
    *,
    if_none_match: str | Unset = UNSET,
    x_shardgate_consistency: str | Unset = UNSET,
    x_shardgate_position: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(if_none_match, Unset):
        headers["If-None-Match"] = if_none_match

    if not isinstance(x_shardgate_consistency, Unset):
        headers["x-shardgate-consistency"] = x_shardgate_consistency

    if not isinstance(x_shardgate_position, Unset):
        headers["x-shardgate-position"] = x_shardgate_position



    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/tenants/{tenant}/collections/{collection}/records/{key}".format(tenant=quote(str(tenant), safe=""),collection=quote(str(collection), safe=""),key=quote(str(key), safe=""),),
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | Problem | RecordEnvelope | None:
    if response.status_code == 200:
        response_200 = RecordEnvelope.from_dict(response.json())



        return response_200

    if response.status_code == 304:
        response_304 = cast(Any, None)
        return response_304

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | Problem | RecordEnvelope]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    tenant: str,
    collection: str,
    key: str,
    *,
    client: AuthenticatedClient,
    if_none_match: str | Unset = UNSET,
    x_shardgate_consistency: str | Unset = UNSET,
    x_shardgate_position: str | Unset = UNSET,

) -> Response[Any | Problem | RecordEnvelope]:
    """ Read a record.

    Args:
        tenant (str):
        collection (str):
        key (str):
        if_none_match (str | Unset):
        x_shardgate_consistency (str | Unset):
        x_shardgate_position (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem | RecordEnvelope]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
collection=collection,
key=key,
if_none_match=if_none_match,
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
    key: str,
    *,
    client: AuthenticatedClient,
    if_none_match: str | Unset = UNSET,
    x_shardgate_consistency: str | Unset = UNSET,
    x_shardgate_position: str | Unset = UNSET,

) -> Any | Problem | RecordEnvelope | None:
    """ Read a record.

    Args:
        tenant (str):
        collection (str):
        key (str):
        if_none_match (str | Unset):
        x_shardgate_consistency (str | Unset):
        x_shardgate_position (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem | RecordEnvelope
     """


    return sync_detailed(
        tenant=tenant,
collection=collection,
key=key,
client=client,
if_none_match=if_none_match,
x_shardgate_consistency=x_shardgate_consistency,
x_shardgate_position=x_shardgate_position,

    ).parsed

async def asyncio_detailed(
    tenant: str,
    collection: str,
    key: str,
    *,
    client: AuthenticatedClient,
    if_none_match: str | Unset = UNSET,
    x_shardgate_consistency: str | Unset = UNSET,
    x_shardgate_position: str | Unset = UNSET,

) -> Response[Any | Problem | RecordEnvelope]:
    """ Read a record.

    Args:
        tenant (str):
        collection (str):
        key (str):
        if_none_match (str | Unset):
        x_shardgate_consistency (str | Unset):
        x_shardgate_position (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem | RecordEnvelope]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
collection=collection,
key=key,
if_none_match=if_none_match,
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
    key: str,
    *,
    client: AuthenticatedClient,
    if_none_match: str | Unset = UNSET,
    x_shardgate_consistency: str | Unset = UNSET,
    x_shardgate_position: str | Unset = UNSET,

) -> Any | Problem | RecordEnvelope | None:
    """ Read a record.

    Args:
        tenant (str):
        collection (str):
        key (str):
        if_none_match (str | Unset):
        x_shardgate_consistency (str | Unset):
        x_shardgate_position (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem | RecordEnvelope
     """


    return (await asyncio_detailed(
        tenant=tenant,
collection=collection,
key=key,
client=client,
if_none_match=if_none_match,
x_shardgate_consistency=x_shardgate_consistency,
x_shardgate_position=x_shardgate_position,

    )).parsed
