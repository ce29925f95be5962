from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.index_info import IndexInfo
from ...models.problem import Problem
from typing import cast



def _get_kwargs(
    tenant: str,
    collection: str,
    index: str,

) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/tenants/{tenant}/collections/{collection}/indexes/{index}".format(tenant=quote(str(tenant), safe=""),collection=quote(str(collection), safe=""),index=quote(str(index), safe=""),),
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> IndexInfo | Problem | None:
    if response.status_code == 200:
        response_200 = IndexInfo.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[IndexInfo | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    tenant: str,
    collection: str,
    index: str,
    *,
    client: AuthenticatedClient,

) -> Response[IndexInfo | Problem]:
    """ An index's definition and state.

    Args:
        tenant (str):
        collection (str):
        index (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[IndexInfo | Problem]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
collection=collection,
index=index,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    tenant: str,
    collection: str,
    index: str,
    *,
    client: AuthenticatedClient,

) -> IndexInfo | Problem | None:
    """ An index's definition and state.

    Args:
        tenant (str):
        collection (str):
        index (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        IndexInfo | Problem
     """


    return sync_detailed(
        tenant=tenant,
collection=collection,
index=index,
client=client,

    ).parsed

async def asyncio_detailed(
    tenant: str,
    collection: str,
    index: str,
    *,
    client: AuthenticatedClient,

) -> Response[IndexInfo | Problem]:
    """ An index's definition and state.

    Args:
        tenant (str):
        collection (str):
        index (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[IndexInfo | Problem]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
collection=collection,
index=index,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    tenant: str,
    collection: str,
    index: str,
    *,
    client: AuthenticatedClient,

) -> IndexInfo | Problem | None:
    """ An index's definition and state.

    Args:
        tenant (str):
        collection (str):
        index (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        IndexInfo | Problem
     """


    return (await asyncio_detailed(
        tenant=tenant,
collection=collection,
index=index,
client=client,

    )).parsed
