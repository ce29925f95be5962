from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.planned_load import PlannedLoad
  from ..models.planned_range_move import PlannedRangeMove
  from ..models.planned_tenant_move import PlannedTenantMove
  from ..models.planned_vshard_move import PlannedVshardMove





T = TypeVar("T", bound="RebalancePlan")



@_attrs_define
class RebalancePlan:
    """ What a rebalance or drain moves.

        Attributes:
            balance (str): `count` or `bytes`. Example: count.
            vshards (list[PlannedVshardMove]): The vshards that change owner, in vshard order (each at most once).
            tenants (list[PlannedTenantMove]): The pinned tenants that leave draining shards, in tenant id order.
            ranges (list[PlannedRangeMove]): The ranges of range-distributed collections that leave draining shards (each to
                the
                receiving shard with the least load), in tenant, collection and key order.
            loads (list[PlannedLoad]): Every registered shard with its load before and after.
     """

    balance: str
    vshards: list[PlannedVshardMove]
    tenants: list[PlannedTenantMove]
    ranges: list[PlannedRangeMove]
    loads: list[PlannedLoad]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.planned_load import PlannedLoad # noqa: PLC0415
        from ..models.planned_range_move import PlannedRangeMove # noqa: PLC0415
        from ..models.planned_tenant_move import PlannedTenantMove # noqa: PLC0415
        from ..models.planned_vshard_move import PlannedVshardMove # noqa: PLC0415
        balance = self.balance

        vshards = []
        for vshards_item_data in self.vshards:
            vshards_item = vshards_item_data.to_dict()
            vshards.append(vshards_item)



        tenants = []
        for tenants_item_data in self.tenants:
            tenants_item = tenants_item_data.to_dict()
            tenants.append(tenants_item)



        ranges = []
        for ranges_item_data in self.ranges:
            ranges_item = ranges_item_data.to_dict()
            ranges.append(ranges_item)



        loads = []
        for loads_item_data in self.loads:
            loads_item = loads_item_data.to_dict()
            loads.append(loads_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "balance": balance,
            "vshards": vshards,
            "tenants": tenants,
            "ranges": ranges,
            "loads": loads,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.planned_load import PlannedLoad # noqa: PLC0415
        from ..models.planned_range_move import PlannedRangeMove # noqa: PLC0415
        from ..models.planned_tenant_move import PlannedTenantMove # noqa: PLC0415
        from ..models.planned_vshard_move import PlannedVshardMove # noqa: PLC0415
        d = dict(src_dict)
        balance = d.pop("balance")

        vshards = []
        _vshards = d.pop("vshards")
        for vshards_item_data in (_vshards):
            vshards_item = PlannedVshardMove.from_dict(vshards_item_data)



            vshards.append(vshards_item)


        tenants = []
        _tenants = d.pop("tenants")
        for tenants_item_data in (_tenants):
            tenants_item = PlannedTenantMove.from_dict(tenants_item_data)



            tenants.append(tenants_item)


        ranges = []
        _ranges = d.pop("ranges")
        for ranges_item_data in (_ranges):
            ranges_item = PlannedRangeMove.from_dict(ranges_item_data)



            ranges.append(ranges_item)


        loads = []
        _loads = d.pop("loads")
        for loads_item_data in (_loads):
            loads_item = PlannedLoad.from_dict(loads_item_data)



            loads.append(loads_item)


        rebalance_plan = cls(
            balance=balance,
            vshards=vshards,
            tenants=tenants,
            ranges=ranges,
            loads=loads,
        )


        rebalance_plan.additional_properties = d
        return rebalance_plan

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
