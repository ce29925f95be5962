from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...types import UNSET, Unset



def _get_kwargs(
    tenant: str,
    path: str,
    *,
    sg_v: int,
    sg_perm: str,
    sg_nbf: int,
    sg_exp: int,
    sg_kid: str,
    sg_grant: str,
    sg_ct: str | Unset = UNSET,
    sg_max: int | Unset = UNSET,
    sg_cd: str | Unset = UNSET,
    sg_once: int | Unset = UNSET,
    sg_sig: str,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["sg-v"] = sg_v

    params["sg-perm"] = sg_perm

    params["sg-nbf"] = sg_nbf

    params["sg-exp"] = sg_exp

    params["sg-kid"] = sg_kid

    params["sg-grant"] = sg_grant

    params["sg-ct"] = sg_ct

    params["sg-max"] = sg_max

    params["sg-cd"] = sg_cd

    params["sg-once"] = sg_once

    params["sg-sig"] = sg_sig


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "head",
        "url": "/valet/{tenant}/{path}".format(tenant=quote(str(tenant), safe=""),path=quote(str(path), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | None:
    if response.status_code == 200:
        return None

    if response.status_code == 400:
        return None

    if response.status_code == 403:
        return None

    if response.status_code == 404:
        return None

    if response.status_code == 414:
        return None

    if response.status_code == 429:
        return None

    if response.status_code == 431:
        return None

    if response.status_code == 500:
        return None

    if response.status_code == 503:
        return None

    if response.status_code == 504:
        return None

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any]:
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
    client: AuthenticatedClient | Client,
    sg_v: int,
    sg_perm: str,
    sg_nbf: int,
    sg_exp: int,
    sg_kid: str,
    sg_grant: str,
    sg_ct: str | Unset = UNSET,
    sg_max: int | Unset = UNSET,
    sg_cd: str | Unset = UNSET,
    sg_once: int | Unset = UNSET,
    sg_sig: str,

) -> Response[Any]:
    """ The valet URL's blob headers, without its bytes.

     Send the URL exactly as it was issued: its `sg-` parameters are signed.

    Args:
        tenant (str):
        path (str):
        sg_v (int):
        sg_perm (str):
        sg_nbf (int):
        sg_exp (int):
        sg_kid (str):
        sg_grant (str):
        sg_ct (str | Unset):
        sg_max (int | Unset):
        sg_cd (str | Unset):
        sg_once (int | Unset):
        sg_sig (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
path=path,
sg_v=sg_v,
sg_perm=sg_perm,
sg_nbf=sg_nbf,
sg_exp=sg_exp,
sg_kid=sg_kid,
sg_grant=sg_grant,
sg_ct=sg_ct,
sg_max=sg_max,
sg_cd=sg_cd,
sg_once=sg_once,
sg_sig=sg_sig,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


async def asyncio_detailed(
    tenant: str,
    path: str,
    *,
    client: AuthenticatedClient | Client,
    sg_v: int,
    sg_perm: str,
    sg_nbf: int,
    sg_exp: int,
    sg_kid: str,
    sg_grant: str,
    sg_ct: str | Unset = UNSET,
    sg_max: int | Unset = UNSET,
    sg_cd: str | Unset = UNSET,
    sg_once: int | Unset = UNSET,
    sg_sig: str,

) -> Response[Any]:
    """ The valet URL's blob headers, without its bytes.

     Send the URL exactly as it was issued: its `sg-` parameters are signed.

    Args:
        tenant (str):
        path (str):
        sg_v (int):
        sg_perm (str):
        sg_nbf (int):
        sg_exp (int):
        sg_kid (str):
        sg_grant (str):
        sg_ct (str | Unset):
        sg_max (int | Unset):
        sg_cd (str | Unset):
        sg_once (int | Unset):
        sg_sig (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any]
     """


    kwargs = _get_kwargs(
        tenant=tenant,
path=path,
sg_v=sg_v,
sg_perm=sg_perm,
sg_nbf=sg_nbf,
sg_exp=sg_exp,
sg_kid=sg_kid,
sg_grant=sg_grant,
sg_ct=sg_ct,
sg_max=sg_max,
sg_cd=sg_cd,
sg_once=sg_once,
sg_sig=sg_sig,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

