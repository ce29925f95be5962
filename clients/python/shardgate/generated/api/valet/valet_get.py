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
        "method": "get",
        "url": "/valet/{tenant}/{path}".format(tenant=quote(str(tenant), safe=""),path=quote(str(path), safe=""),),
        "params": params,
    }


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

) -> Response[Any | File | Problem]:
    """ Download (GET, HEAD) or upload (PUT) a blob with a valet URL; no token.

     Send the URL exactly as it was issued: its `sg-` parameters are signed, and any change to one
    fails the signature.

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
        Response[Any | File | Problem]
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

def sync(
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

) -> Any | File | Problem | None:
    """ Download (GET, HEAD) or upload (PUT) a blob with a valet URL; no token.

     Send the URL exactly as it was issued: its `sg-` parameters are signed, and any change to one
    fails the signature.

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
        Any | File | Problem
     """


    return sync_detailed(
        tenant=tenant,
path=path,
client=client,
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

    ).parsed

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

) -> Response[Any | File | Problem]:
    """ Download (GET, HEAD) or upload (PUT) a blob with a valet URL; no token.

     Send the URL exactly as it was issued: its `sg-` parameters are signed, and any change to one
    fails the signature.

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
        Response[Any | File | Problem]
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

async def asyncio(
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

) -> Any | File | Problem | None:
    """ Download (GET, HEAD) or upload (PUT) a blob with a valet URL; no token.

     Send the URL exactly as it was issued: its `sg-` parameters are signed, and any change to one
    fails the signature.

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
        Any | File | Problem
     """


    return (await asyncio_detailed(
        tenant=tenant,
path=path,
client=client,
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

    )).parsed
