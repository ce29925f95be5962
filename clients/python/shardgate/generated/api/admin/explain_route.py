from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.problem import Problem
from ...models.route_explanation import RouteExplanation
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    tenant: str,
    collection: str | Unset = UNSET,
    key: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["tenant"] = tenant

    params["collection"] = collection

    params["key"] = key


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/admin/route",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | RouteExplanation | None:
    if response.status_code == 200:
        response_200 = RouteExplanation.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | RouteExplanation]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    tenant: str,
    collection: str | Unset = UNSET,
    key: str | Unset = UNSET,

) -> Response[Problem | RouteExplanation]:
    """ Explain where a tenant's (collection's, record's) data lives.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        tenant (str):
        collection (str | Unset):
        key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RouteExplanation]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
collection=collection,
key=key,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    tenant: str,
    collection: str | Unset = UNSET,
    key: str | Unset = UNSET,

) -> Problem | RouteExplanation | None:
    """ Explain where a tenant's (collection's, record's) data lives.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        tenant (str):
        collection (str | Unset):
        key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RouteExplanation
     """


    return sync_detailed(
        client=client,
tenant=tenant,
collection=collection,
key=key,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    tenant: str,
    collection: str | Unset = UNSET,
    key: str | Unset = UNSET,

) -> Response[Problem | RouteExplanation]:
    """ Explain where a tenant's (collection's, record's) data lives.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        tenant (str):
        collection (str | Unset):
        key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RouteExplanation]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
collection=collection,
key=key,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    tenant: str,
    collection: str | Unset = UNSET,
    key: str | Unset = UNSET,

) -> Problem | RouteExplanation | None:
    """ Explain where a tenant's (collection's, record's) data lives.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        tenant (str):
        collection (str | Unset):
        key (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RouteExplanation
     """


    return (await asyncio_detailed(
        client=client,
tenant=tenant,
collection=collection,
key=key,

    )).parsed
