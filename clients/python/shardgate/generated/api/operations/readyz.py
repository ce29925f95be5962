from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.problem import Problem
from ...models.readiness import Readiness
from typing import cast



def _get_kwargs(
    
) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/readyz",
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | Readiness | None:
    if response.status_code == 200:
        response_200 = Readiness.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())



        return response_400

    if response.status_code == 414:
        response_414 = Problem.from_dict(response.json())



        return response_414

    if response.status_code == 431:
        response_431 = Problem.from_dict(response.json())



        return response_431

    if response.status_code == 503:
        response_503 = Readiness.from_dict(response.json())



        return response_503

    if response.status_code == 504:
        response_504 = Problem.from_dict(response.json())



        return response_504

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | Readiness]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,

) -> Response[Problem | Readiness]:
    """ Readiness: whether this instance can serve traffic (each database is pinged at most once a
    second, however many probes arrive). The catalog is pinged whatever its circuit breaker
    says, and the breaker's state is reported; when it does not answer `SELECT 1` within the probe
    timeout (`storage.pool.probe_timeout`, default 2 s) it is `degraded`, and the instance stays
    ready: it routes on the shard map it holds (loaded at start, so an instance never runs
    without one). Every shard not taken offline is probed the same way and reported (with its
    circuit breaker), but a shard that is down does not make the instance unready either. 503
    only while an issuer whose keys are fetched has no key set yet (`key_sets`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Readiness]
     """


    kwargs = _get_kwargs(
        
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient | Client,

) -> Problem | Readiness | None:
    """ Readiness: whether this instance can serve traffic (each database is pinged at most once a
    second, however many probes arrive). The catalog is pinged whatever its circuit breaker
    says, and the breaker's state is reported; when it does not answer `SELECT 1` within the probe
    timeout (`storage.pool.probe_timeout`, default 2 s) it is `degraded`, and the instance stays
    ready: it routes on the shard map it holds (loaded at start, so an instance never runs
    without one). Every shard not taken offline is probed the same way and reported (with its
    circuit breaker), but a shard that is down does not make the instance unready either. 503
    only while an issuer whose keys are fetched has no key set yet (`key_sets`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Readiness
     """


    return sync_detailed(
        client=client,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,

) -> Response[Problem | Readiness]:
    """ Readiness: whether this instance can serve traffic (each database is pinged at most once a
    second, however many probes arrive). The catalog is pinged whatever its circuit breaker
    says, and the breaker's state is reported; when it does not answer `SELECT 1` within the probe
    timeout (`storage.pool.probe_timeout`, default 2 s) it is `degraded`, and the instance stays
    ready: it routes on the shard map it holds (loaded at start, so an instance never runs
    without one). Every shard not taken offline is probed the same way and reported (with its
    circuit breaker), but a shard that is down does not make the instance unready either. 503
    only while an issuer whose keys are fetched has no key set yet (`key_sets`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Readiness]
     """


    kwargs = _get_kwargs(
        
    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient | Client,

) -> Problem | Readiness | None:
    """ Readiness: whether this instance can serve traffic (each database is pinged at most once a
    second, however many probes arrive). The catalog is pinged whatever its circuit breaker
    says, and the breaker's state is reported; when it does not answer `SELECT 1` within the probe
    timeout (`storage.pool.probe_timeout`, default 2 s) it is `degraded`, and the instance stays
    ready: it routes on the shard map it holds (loaded at start, so an instance never runs
    without one). Every shard not taken offline is probed the same way and reported (with its
    circuit breaker), but a shard that is down does not make the instance unready either. 503
    only while an issuer whose keys are fetched has no key set yet (`key_sets`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Readiness
     """


    return (await asyncio_detailed(
        client=client,

    )).parsed
