from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.measures import Measures
  from ..models.point import Point





T = TypeVar("T", bound="ShardLoadView")



@_attrs_define
class ShardLoadView:
    """ One shard's load.

        Attributes:
            request (Measures): Counts over a span, and the same as rates.
            moves (Measures): Counts over a span, and the same as rates.
            maintenance (Measures): Counts over a span, and the same as rates.
            shard (str): The shard.
            registered (bool): Whether it is still registered (load of a shard removed since is listed after the others).
            share_of_statement_time (float): Its share of the fleet's statement time (every kind of work), 0 to 1.
            series (list[Point]): Its load of every kind per step (with `step`).
     """

    request: Measures
    moves: Measures
    maintenance: Measures
    shard: str
    registered: bool
    share_of_statement_time: float
    series: list[Point]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.measures import Measures # noqa: PLC0415
        from ..models.point import Point # noqa: PLC0415
        request = self.request.to_dict()

        moves = self.moves.to_dict()

        maintenance = self.maintenance.to_dict()

        shard = self.shard

        registered = self.registered

        share_of_statement_time = self.share_of_statement_time

        series = []
        for series_item_data in self.series:
            series_item = series_item_data.to_dict()
            series.append(series_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "request": request,
            "moves": moves,
            "maintenance": maintenance,
            "shard": shard,
            "registered": registered,
            "share_of_statement_time": share_of_statement_time,
            "series": series,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.measures import Measures # noqa: PLC0415
        from ..models.point import Point # noqa: PLC0415
        d = dict(src_dict)
        request = Measures.from_dict(d.pop("request"))




        moves = Measures.from_dict(d.pop("moves"))




        maintenance = Measures.from_dict(d.pop("maintenance"))




        shard = d.pop("shard")

        registered = d.pop("registered")

        share_of_statement_time = d.pop("share_of_statement_time")

        series = []
        _series = d.pop("series")
        for series_item_data in (_series):
            series_item = Point.from_dict(series_item_data)



            series.append(series_item)


        shard_load_view = cls(
            request=request,
            moves=moves,
            maintenance=maintenance,
            shard=shard,
            registered=registered,
            share_of_statement_time=share_of_statement_time,
            series=series,
        )


        shard_load_view.additional_properties = d
        return shard_load_view

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
