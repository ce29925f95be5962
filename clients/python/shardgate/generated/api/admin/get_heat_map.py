from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.heat_map_view import HeatMapView
from ...models.heat_metric import HeatMetric
from ...models.heat_work import HeatWork
from ...models.problem import Problem
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    metric: HeatMetric | Unset = UNSET,
    work: HeatWork | Unset = UNSET,
    since: str | Unset = UNSET,
    step: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_metric: str | Unset = UNSET
    if not isinstance(metric, Unset):
        json_metric = metric.value

    params["metric"] = json_metric

    json_work: str | Unset = UNSET
    if not isinstance(work, Unset):
        json_work = work.value

    params["work"] = json_work

    params["since"] = since

    params["step"] = step


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/admin/load/heatmap",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> HeatMapView | Problem | None:
    if response.status_code == 200:
        response_200 = HeatMapView.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[HeatMapView | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    metric: HeatMetric | Unset = UNSET,
    work: HeatWork | Unset = UNSET,
    since: str | Unset = UNSET,
    step: str | Unset = UNSET,

) -> Response[HeatMapView | Problem]:
    """ The heat map of the load picture: a matrix of vshards (rows, in vshard order, each labelled
    with the shard that owns it now) by time (columns), the data of a Key Visualizer. Hot spots,
    sequential writes and periodic jobs show as bright cells, lines and stripes.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        metric (HeatMetric | Unset): The measure a heat map shows.
        work (HeatWork | Unset): Whose work a heat map shows.
        since (str | Unset):
        step (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[HeatMapView | Problem]
     """


    kwargs = _get_kwargs(
        metric=metric,
work=work,
since=since,
step=step,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    metric: HeatMetric | Unset = UNSET,
    work: HeatWork | Unset = UNSET,
    since: str | Unset = UNSET,
    step: str | Unset = UNSET,

) -> HeatMapView | Problem | None:
    """ The heat map of the load picture: a matrix of vshards (rows, in vshard order, each labelled
    with the shard that owns it now) by time (columns), the data of a Key Visualizer. Hot spots,
    sequential writes and periodic jobs show as bright cells, lines and stripes.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        metric (HeatMetric | Unset): The measure a heat map shows.
        work (HeatWork | Unset): Whose work a heat map shows.
        since (str | Unset):
        step (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        HeatMapView | Problem
     """


    return sync_detailed(
        client=client,
metric=metric,
work=work,
since=since,
step=step,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    metric: HeatMetric | Unset = UNSET,
    work: HeatWork | Unset = UNSET,
    since: str | Unset = UNSET,
    step: str | Unset = UNSET,

) -> Response[HeatMapView | Problem]:
    """ The heat map of the load picture: a matrix of vshards (rows, in vshard order, each labelled
    with the shard that owns it now) by time (columns), the data of a Key Visualizer. Hot spots,
    sequential writes and periodic jobs show as bright cells, lines and stripes.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        metric (HeatMetric | Unset): The measure a heat map shows.
        work (HeatWork | Unset): Whose work a heat map shows.
        since (str | Unset):
        step (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[HeatMapView | Problem]
     """


    kwargs = _get_kwargs(
        metric=metric,
work=work,
since=since,
step=step,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    metric: HeatMetric | Unset = UNSET,
    work: HeatWork | Unset = UNSET,
    since: str | Unset = UNSET,
    step: str | Unset = UNSET,

) -> HeatMapView | Problem | None:
    """ The heat map of the load picture: a matrix of vshards (rows, in vshard order, each labelled
    with the shard that owns it now) by time (columns), the data of a Key Visualizer. Hot spots,
    sequential writes and periodic jobs show as bright cells, lines and stripes.

     Served on the admin listener (`admin.listen`) when one is configured; the public listener then
    answers 404 `not_found`, as for any unknown path.

    Args:
        metric (HeatMetric | Unset): The measure a heat map shows.
        work (HeatWork | Unset): Whose work a heat map shows.
        since (str | Unset):
        step (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        HeatMapView | Problem
     """


    return (await asyncio_detailed(
        client=client,
metric=metric,
work=work,
since=since,
step=step,

    )).parsed
