from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.problem import Problem
from ...models.quota_limits import QuotaLimits
from ...models.tier_quotas import TierQuotas
from typing import cast



def _get_kwargs(
    tier: str,
    *,
    body: QuotaLimits,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/admin/tiers/{tier}/quotas".format(tier=quote(str(tier), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Problem | TierQuotas | None:
    if response.status_code == 200:
        response_200 = TierQuotas.from_dict(response.json())



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

    if response.status_code == 408:
        response_408 = Problem.from_dict(response.json())



        return response_408

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())



        return response_413

    if response.status_code == 414:
        response_414 = Problem.from_dict(response.json())



        return response_414

    if response.status_code == 415:
        response_415 = Problem.from_dict(response.json())



        return response_415

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Problem | TierQuotas]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    tier: str,
    *,
    client: AuthenticatedClient,
    body: QuotaLimits,

) -> Response[Problem | TierQuotas]:
    """ Set a tier's quotas on every instance, replacing its configured ones (and any set before):
    each key a number, or `null` (or left out) for unlimited. Every tenant of the tier is held
    to them (with its own overrides applied) within one catalog poll, without a restart. Audited
    as `tier.quotas.set`.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        tier (str):
        body (QuotaLimits): Quotas: the most a tenant may keep of each part of its usage; `null`
            (or, in a request, a key
            left out) is unlimited.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | TierQuotas]
     """


    kwargs = _get_kwargs(
        tier=tier,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    tier: str,
    *,
    client: AuthenticatedClient,
    body: QuotaLimits,

) -> Problem | TierQuotas | None:
    """ Set a tier's quotas on every instance, replacing its configured ones (and any set before):
    each key a number, or `null` (or left out) for unlimited. Every tenant of the tier is held
    to them (with its own overrides applied) within one catalog poll, without a restart. Audited
    as `tier.quotas.set`.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        tier (str):
        body (QuotaLimits): Quotas: the most a tenant may keep of each part of its usage; `null`
            (or, in a request, a key
            left out) is unlimited.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | TierQuotas
     """


    return sync_detailed(
        tier=tier,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    tier: str,
    *,
    client: AuthenticatedClient,
    body: QuotaLimits,

) -> Response[Problem | TierQuotas]:
    """ Set a tier's quotas on every instance, replacing its configured ones (and any set before):
    each key a number, or `null` (or left out) for unlimited. Every tenant of the tier is held
    to them (with its own overrides applied) within one catalog poll, without a restart. Audited
    as `tier.quotas.set`.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        tier (str):
        body (QuotaLimits): Quotas: the most a tenant may keep of each part of its usage; `null`
            (or, in a request, a key
            left out) is unlimited.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | TierQuotas]
     """


    kwargs = _get_kwargs(
        tier=tier,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    tier: str,
    *,
    client: AuthenticatedClient,
    body: QuotaLimits,

) -> Problem | TierQuotas | None:
    """ Set a tier's quotas on every instance, replacing its configured ones (and any set before):
    each key a number, or `null` (or left out) for unlimited. Every tenant of the tier is held
    to them (with its own overrides applied) within one catalog poll, without a restart. Audited
    as `tier.quotas.set`.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        tier (str):
        body (QuotaLimits): Quotas: the most a tenant may keep of each part of its usage; `null`
            (or, in a request, a key
            left out) is unlimited.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | TierQuotas
     """


    return (await asyncio_detailed(
        tier=tier,
client=client,
body=body,

    )).parsed
