from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.get_request_health_by import GetRequestHealthBy
from ...models.problem import Problem
from ...models.request_health_view import RequestHealthView
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    span: str | Unset = UNSET,
    by: GetRequestHealthBy | Unset = UNSET,
    step: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["span"] = span

    json_by: str | Unset = UNSET
    if not isinstance(by, Unset):
        json_by = by.value

    params["by"] = json_by

    params["step"] = step


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/admin/health/requests",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | RequestHealthView | None:
    if response.status_code == 200:
        response_200 = RequestHealthView.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | RequestHealthView]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    span: str | Unset = UNSET,
    by: GetRequestHealthBy | Unset = UNSET,
    step: str | Unset = UNSET,

) -> Response[Problem | RequestHealthView]:
    """ Request health over time: per route template (or per shard), per step, the request rate, the
    error rate (5xx and 429) and the p50 and p99 latency, from every instance's windows of
    `storage.load.window` summed (the latency percentiles from their merged histograms). Windows
    still open are not in it.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        span (str | Unset):
        by (GetRequestHealthBy | Unset): What the series are of.
        step (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RequestHealthView]
     """


    kwargs = _get_kwargs(
        span=span,
by=by,
step=step,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    span: str | Unset = UNSET,
    by: GetRequestHealthBy | Unset = UNSET,
    step: str | Unset = UNSET,

) -> Problem | RequestHealthView | None:
    """ Request health over time: per route template (or per shard), per step, the request rate, the
    error rate (5xx and 429) and the p50 and p99 latency, from every instance's windows of
    `storage.load.window` summed (the latency percentiles from their merged histograms). Windows
    still open are not in it.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        span (str | Unset):
        by (GetRequestHealthBy | Unset): What the series are of.
        step (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RequestHealthView
     """


    return sync_detailed(
        client=client,
span=span,
by=by,
step=step,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    span: str | Unset = UNSET,
    by: GetRequestHealthBy | Unset = UNSET,
    step: str | Unset = UNSET,

) -> Response[Problem | RequestHealthView]:
    """ Request health over time: per route template (or per shard), per step, the request rate, the
    error rate (5xx and 429) and the p50 and p99 latency, from every instance's windows of
    `storage.load.window` summed (the latency percentiles from their merged histograms). Windows
    still open are not in it.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        span (str | Unset):
        by (GetRequestHealthBy | Unset): What the series are of.
        step (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RequestHealthView]
     """


    kwargs = _get_kwargs(
        span=span,
by=by,
step=step,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    span: str | Unset = UNSET,
    by: GetRequestHealthBy | Unset = UNSET,
    step: str | Unset = UNSET,

) -> Problem | RequestHealthView | None:
    """ Request health over time: per route template (or per shard), per step, the request rate, the
    error rate (5xx and 429) and the p50 and p99 latency, from every instance's windows of
    `storage.load.window` summed (the latency percentiles from their merged histograms). Windows
    still open are not in it.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        span (str | Unset):
        by (GetRequestHealthBy | Unset): What the series are of.
        step (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RequestHealthView
     """


    return (await asyncio_detailed(
        client=client,
span=span,
by=by,
step=step,

    )).parsed
