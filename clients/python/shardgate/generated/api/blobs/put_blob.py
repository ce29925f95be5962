from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.blob_info import BlobInfo
from ...models.problem import Problem
from ...types import File, FileTypes
from ...types import UNSET, Unset
from io import BytesIO
from typing import cast



def _get_kwargs(
    tenant: str,
    path: str,
    *,
    body: File,
    if_match: str | Unset = UNSET,
    if_none_match: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(if_match, Unset):
        headers["If-Match"] = if_match

    if not isinstance(if_none_match, Unset):
        headers["If-None-Match"] = if_none_match



    

    

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/tenants/{tenant}/blobs/{path}".format(tenant=quote(str(tenant), safe=""),path=quote(str(path), safe=""),),
    }

    _kwargs["content"] = body.payload
    headers["Content-Type"] = "*/*"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> BlobInfo | Problem | None:
    if response.status_code == 200:
        response_200 = BlobInfo.from_dict(response.json())



        return response_200

    if response.status_code == 201:
        response_201 = BlobInfo.from_dict(response.json())



        return response_201

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

    if response.status_code == 412:
        response_412 = Problem.from_dict(response.json())



        return response_412

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())



        return response_413

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[BlobInfo | Problem]:
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
    body: File,
    if_match: str | Unset = UNSET,
    if_none_match: str | Unset = UNSET,

) -> Response[BlobInfo | Problem]:
    """ Upload a blob (streamed; replaces any blob at the path atomically).

    Args:
        tenant (str):
        path (str):
        if_match (str | Unset):
        if_none_match (str | Unset):
        body (File): Bytes, as they are: a blob's body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BlobInfo | Problem]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
path=path,
body=body,
if_match=if_match,
if_none_match=if_none_match,

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
    body: File,
    if_match: str | Unset = UNSET,
    if_none_match: str | Unset = UNSET,

) -> BlobInfo | Problem | None:
    """ Upload a blob (streamed; replaces any blob at the path atomically).

    Args:
        tenant (str):
        path (str):
        if_match (str | Unset):
        if_none_match (str | Unset):
        body (File): Bytes, as they are: a blob's body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BlobInfo | Problem
     """


    return sync_detailed(
        tenant=tenant,
path=path,
client=client,
body=body,
if_match=if_match,
if_none_match=if_none_match,

    ).parsed

async def asyncio_detailed(
    tenant: str,
    path: str,
    *,
    client: AuthenticatedClient,
    body: File,
    if_match: str | Unset = UNSET,
    if_none_match: str | Unset = UNSET,

) -> Response[BlobInfo | Problem]:
    """ Upload a blob (streamed; replaces any blob at the path atomically).

    Args:
        tenant (str):
        path (str):
        if_match (str | Unset):
        if_none_match (str | Unset):
        body (File): Bytes, as they are: a blob's body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BlobInfo | Problem]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
path=path,
body=body,
if_match=if_match,
if_none_match=if_none_match,

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
    body: File,
    if_match: str | Unset = UNSET,
    if_none_match: str | Unset = UNSET,

) -> BlobInfo | Problem | None:
    """ Upload a blob (streamed; replaces any blob at the path atomically).

    Args:
        tenant (str):
        path (str):
        if_match (str | Unset):
        if_none_match (str | Unset):
        body (File): Bytes, as they are: a blob's body.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BlobInfo | Problem
     """


    return (await asyncio_detailed(
        tenant=tenant,
path=path,
client=client,
body=body,
if_match=if_match,
if_none_match=if_none_match,

    )).parsed
