from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.load_view import LoadView
from ...models.problem import Problem
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    window: str | Unset = UNSET,
    step: str | Unset = UNSET,
    top: int | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["window"] = window

    params["step"] = step

    params["top"] = top


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/admin/load",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> LoadView | Problem | None:
    if response.status_code == 200:
        response_200 = LoadView.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[LoadView | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    window: str | Unset = UNSET,
    step: str | Unset = UNSET,
    top: int | Unset = UNSET,

) -> Response[LoadView | Problem]:
    """ The load picture: the fleet's load on the shards over a span of time (every instance's,
    summed), per shard and kind of work, the heaviest vshards and tenants, with optional time
    series. Counted at each shard statement into windows of `storage.load.window` (default 10 s);
    windows still open (the last one) are not in it.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        window (str | Unset):
        step (str | Unset):
        top (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[LoadView | Problem]
     """


    kwargs = _get_kwargs(
        window=window,
step=step,
top=top,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    window: str | Unset = UNSET,
    step: str | Unset = UNSET,
    top: int | Unset = UNSET,

) -> LoadView | Problem | None:
    """ The load picture: the fleet's load on the shards over a span of time (every instance's,
    summed), per shard and kind of work, the heaviest vshards and tenants, with optional time
    series. Counted at each shard statement into windows of `storage.load.window` (default 10 s);
    windows still open (the last one) are not in it.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        window (str | Unset):
        step (str | Unset):
        top (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        LoadView | Problem
     """


    return sync_detailed(
        client=client,
window=window,
step=step,
top=top,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    window: str | Unset = UNSET,
    step: str | Unset = UNSET,
    top: int | Unset = UNSET,

) -> Response[LoadView | Problem]:
    """ The load picture: the fleet's load on the shards over a span of time (every instance's,
    summed), per shard and kind of work, the heaviest vshards and tenants, with optional time
    series. Counted at each shard statement into windows of `storage.load.window` (default 10 s);
    windows still open (the last one) are not in it.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        window (str | Unset):
        step (str | Unset):
        top (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[LoadView | Problem]
     """


    kwargs = _get_kwargs(
        window=window,
step=step,
top=top,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    window: str | Unset = UNSET,
    step: str | Unset = UNSET,
    top: int | Unset = UNSET,

) -> LoadView | Problem | None:
    """ The load picture: the fleet's load on the shards over a span of time (every instance's,
    summed), per shard and kind of work, the heaviest vshards and tenants, with optional time
    series. Counted at each shard statement into windows of `storage.load.window` (default 10 s);
    windows still open (the last one) are not in it.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        window (str | Unset):
        step (str | Unset):
        top (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        LoadView | Problem
     """


    return (await asyncio_detailed(
        client=client,
window=window,
step=step,
top=top,

    )).parsed
