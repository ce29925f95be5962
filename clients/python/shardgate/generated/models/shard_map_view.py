from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.map_shard import MapShard
  from ..models.vshard_range import VshardRange





T = TypeVar("T", bound="ShardMapView")



@_attrs_define
class ShardMapView:
    """ The shard map.

        Attributes:
            epoch (int): Increases on every change of shards, vshards, tenants or pins.
            vshard_count (int): Number of vshards.
            shards (list[MapShard]): Registered shards.
            vshard_ranges (list[VshardRange]): The vshard table as runs.
            tenants (int): Number of tenants.
            pinned_tenants (int): Number of pinned tenants.
     """

    epoch: int
    vshard_count: int
    shards: list[MapShard]
    vshard_ranges: list[VshardRange]
    tenants: int
    pinned_tenants: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.map_shard import MapShard # noqa: PLC0415
        from ..models.vshard_range import VshardRange # noqa: PLC0415
        epoch = self.epoch

        vshard_count = self.vshard_count

        shards = []
        for shards_item_data in self.shards:
            shards_item = shards_item_data.to_dict()
            shards.append(shards_item)



        vshard_ranges = []
        for vshard_ranges_item_data in self.vshard_ranges:
            vshard_ranges_item = vshard_ranges_item_data.to_dict()
            vshard_ranges.append(vshard_ranges_item)



        tenants = self.tenants

        pinned_tenants = self.pinned_tenants


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "epoch": epoch,
            "vshard_count": vshard_count,
            "shards": shards,
            "vshard_ranges": vshard_ranges,
            "tenants": tenants,
            "pinned_tenants": pinned_tenants,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.map_shard import MapShard # noqa: PLC0415
        from ..models.vshard_range import VshardRange # noqa: PLC0415
        d = dict(src_dict)
        epoch = d.pop("epoch")

        vshard_count = d.pop("vshard_count")

        shards = []
        _shards = d.pop("shards")
        for shards_item_data in (_shards):
            shards_item = MapShard.from_dict(shards_item_data)



            shards.append(shards_item)


        vshard_ranges = []
        _vshard_ranges = d.pop("vshard_ranges")
        for vshard_ranges_item_data in (_vshard_ranges):
            vshard_ranges_item = VshardRange.from_dict(vshard_ranges_item_data)



            vshard_ranges.append(vshard_ranges_item)


        tenants = d.pop("tenants")

        pinned_tenants = d.pop("pinned_tenants")

        shard_map_view = cls(
            epoch=epoch,
            vshard_count=vshard_count,
            shards=shards,
            vshard_ranges=vshard_ranges,
            tenants=tenants,
            pinned_tenants=pinned_tenants,
        )


        shard_map_view.additional_properties = d
        return shard_map_view

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
