from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.problem import Problem
from ...types import File, FileTypes
from ...types import UNSET, Unset
from io import BytesIO
from typing import cast



def _get_kwargs(
    tenant: str,
    path: str,
    *,
    range_: str | Unset = UNSET,
    if_none_match: str | Unset = UNSET,
    if_range: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(range_, Unset):
        headers["Range"] = range_

    if not isinstance(if_none_match, Unset):
        headers["If-None-Match"] = if_none_match

    if not isinstance(if_range, Unset):
        headers["If-Range"] = if_range



    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/tenants/{tenant}/blobs/{path}".format(tenant=quote(str(tenant), safe=""),path=quote(str(path), safe=""),),
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | File | Problem | None:
    if response.status_code == 200:
        response_200 = File(
             payload = BytesIO(response.content)
        )



        return response_200

    if response.status_code == 206:
        response_206 = File(
             payload = BytesIO(response.content)
        )



        return response_206

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

    if response.status_code == 416:
        response_416 = Problem.from_dict(response.json())



        return response_416

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())



        return response_429

    if response.status_code == 431:
        response_431 = Problem.from_dict(response.json())



        return response_431

    if response.status_code == 500:
        response_500 = Problem.from_dict(response.json())



        return response_500

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | File | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    tenant: str,
    path: str,
    *,
    client: AuthenticatedClient,
    range_: str | Unset = UNSET,
    if_none_match: str | Unset = UNSET,
    if_range: str | Unset = UNSET,

) -> Response[Any | File | Problem]:
    """ Download a blob (or a single byte range of it).

    Args:
        tenant (str):
        path (str):
        range_ (str | Unset):
        if_none_match (str | Unset):
        if_range (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | File | Problem]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
path=path,
range_=range_,
if_none_match=if_none_match,
if_range=if_range,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    tenant: str,
    path: str,
    *,
    client: AuthenticatedClient,
    range_: str | Unset = UNSET,
    if_none_match: str | Unset = UNSET,
    if_range: str | Unset = UNSET,

) -> Any | File | Problem | None:
    """ Download a blob (or a single byte range of it).

    Args:
        tenant (str):
        path (str):
        range_ (str | Unset):
        if_none_match (str | Unset):
        if_range (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | File | Problem
     """


    return sync_detailed(
        tenant=tenant,
path=path,
client=client,
range_=range_,
if_none_match=if_none_match,
if_range=if_range,

    ).parsed

async def asyncio_detailed(
    tenant: str,
    path: str,
    *,
    client: AuthenticatedClient,
    range_: str | Unset = UNSET,
    if_none_match: str | Unset = UNSET,
    if_range: str | Unset = UNSET,

) -> Response[Any | File | Problem]:
    """ Download a blob (or a single byte range of it).

    Args:
        tenant (str):
        path (str):
        range_ (str | Unset):
        if_none_match (str | Unset):
        if_range (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | File | Problem]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
path=path,
range_=range_,
if_none_match=if_none_match,
if_range=if_range,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    tenant: str,
    path: str,
    *,
    client: AuthenticatedClient,
    range_: str | Unset = UNSET,
    if_none_match: str | Unset = UNSET,
    if_range: str | Unset = UNSET,

) -> Any | File | Problem | None:
    """ Download a blob (or a single byte range of it).

    Args:
        tenant (str):
        path (str):
        range_ (str | Unset):
        if_none_match (str | Unset):
        if_range (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | File | Problem
     """


    return (await asyncio_detailed(
        tenant=tenant,
path=path,
client=client,
range_=range_,
if_none_match=if_none_match,
if_range=if_range,

    )).parsed
