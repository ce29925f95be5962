from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.page_record_envelope import PageRecordEnvelope
from ...models.problem import Problem
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    tenant: str,
    collection: str,
    index: str,
    *,
    value: str | Unset = UNSET,
    from_: str | Unset = UNSET,
    to: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["value"] = value

    params["from"] = from_

    params["to"] = to

    params["limit"] = limit

    params["cursor"] = cursor


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/tenants/{tenant}/collections/{collection}/indexes/{index}/records".format(tenant=quote(str(tenant), safe=""),collection=quote(str(collection), safe=""),index=quote(str(index), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> PageRecordEnvelope | Problem | None:
    if response.status_code == 200:
        response_200 = PageRecordEnvelope.from_dict(response.json())



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

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())



        return response_409

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[PageRecordEnvelope | Problem]:
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
    value: str | Unset = UNSET,
    from_: str | Unset = UNSET,
    to: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> Response[PageRecordEnvelope | Problem]:
    """ Find records by an indexed value (or a range of values), verified against the records.

    Args:
        tenant (str):
        collection (str):
        index (str):
        value (str | Unset):
        from_ (str | Unset):
        to (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PageRecordEnvelope | Problem]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
collection=collection,
index=index,
value=value,
from_=from_,
to=to,
limit=limit,
cursor=cursor,

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
    value: str | Unset = UNSET,
    from_: str | Unset = UNSET,
    to: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> PageRecordEnvelope | Problem | None:
    """ Find records by an indexed value (or a range of values), verified against the records.

    Args:
        tenant (str):
        collection (str):
        index (str):
        value (str | Unset):
        from_ (str | Unset):
        to (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PageRecordEnvelope | Problem
     """


    return sync_detailed(
        tenant=tenant,
collection=collection,
index=index,
client=client,
value=value,
from_=from_,
to=to,
limit=limit,
cursor=cursor,

    ).parsed

async def asyncio_detailed(
    tenant: str,
    collection: str,
    index: str,
    *,
    client: AuthenticatedClient,
    value: str | Unset = UNSET,
    from_: str | Unset = UNSET,
    to: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> Response[PageRecordEnvelope | Problem]:
    """ Find records by an indexed value (or a range of values), verified against the records.

    Args:
        tenant (str):
        collection (str):
        index (str):
        value (str | Unset):
        from_ (str | Unset):
        to (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PageRecordEnvelope | Problem]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
collection=collection,
index=index,
value=value,
from_=from_,
to=to,
limit=limit,
cursor=cursor,

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
    value: str | Unset = UNSET,
    from_: str | Unset = UNSET,
    to: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> PageRecordEnvelope | Problem | None:
    """ Find records by an indexed value (or a range of values), verified against the records.

    Args:
        tenant (str):
        collection (str):
        index (str):
        value (str | Unset):
        from_ (str | Unset):
        to (str | Unset):
        limit (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PageRecordEnvelope | Problem
     """


    return (await asyncio_detailed(
        tenant=tenant,
collection=collection,
index=index,
client=client,
value=value,
from_=from_,
to=to,
limit=limit,
cursor=cursor,

    )).parsed
