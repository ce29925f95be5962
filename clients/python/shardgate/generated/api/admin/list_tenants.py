from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.list_tenants_include import ListTenantsInclude
from ...models.page_tenant import PageTenant
from ...models.problem import Problem
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    include: ListTenantsInclude | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["limit"] = limit

    params["cursor"] = cursor

    json_include: str | Unset = UNSET
    if not isinstance(include, Unset):
        json_include = include.value

    params["include"] = json_include


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/admin/tenants",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> PageTenant | Problem | None:
    if response.status_code == 200:
        response_200 = PageTenant.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[PageTenant | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    include: ListTenantsInclude | Unset = UNSET,

) -> Response[PageTenant | Problem]:
    """ List tenants ordered by id; with `include=usage`, each with what it stores.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        limit (int | Unset):
        cursor (str | Unset):
        include (ListTenantsInclude | Unset): What a tenant list adds to each tenant.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PageTenant | Problem]
     """


    kwargs = _get_kwargs(
        limit=limit,
cursor=cursor,
include=include,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    include: ListTenantsInclude | Unset = UNSET,

) -> PageTenant | Problem | None:
    """ List tenants ordered by id; with `include=usage`, each with what it stores.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        limit (int | Unset):
        cursor (str | Unset):
        include (ListTenantsInclude | Unset): What a tenant list adds to each tenant.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PageTenant | Problem
     """


    return sync_detailed(
        client=client,
limit=limit,
cursor=cursor,
include=include,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    include: ListTenantsInclude | Unset = UNSET,

) -> Response[PageTenant | Problem]:
    """ List tenants ordered by id; with `include=usage`, each with what it stores.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        limit (int | Unset):
        cursor (str | Unset):
        include (ListTenantsInclude | Unset): What a tenant list adds to each tenant.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PageTenant | Problem]
     """


    kwargs = _get_kwargs(
        limit=limit,
cursor=cursor,
include=include,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    include: ListTenantsInclude | Unset = UNSET,

) -> PageTenant | Problem | None:
    """ List tenants ordered by id; with `include=usage`, each with what it stores.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        limit (int | Unset):
        cursor (str | Unset):
        include (ListTenantsInclude | Unset): What a tenant list adds to each tenant.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PageTenant | Problem
     """


    return (await asyncio_detailed(
        client=client,
limit=limit,
cursor=cursor,
include=include,

    )).parsed
