from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.shard_load_view import ShardLoadView
  from ..models.tenant_load_view import TenantLoadView
  from ..models.vshard_load_view import VshardLoadView
  from ..models.work_measures import WorkMeasures





T = TypeVar("T", bound="LoadView")



@_attrs_define
class LoadView:
    """ The fleet's load over a span of time.

        Attributes:
            since (str): The span's start, RFC 3339 (a window boundary).
            until (str): Its end, RFC 3339: the end of the last window that has closed.
            window_s (float): Its length (seconds): the rates are the counts divided by it.
            instances (int): How many instances stored load in the span (the fleet's load is their sum).
            fleet (WorkMeasures): Load by whose work it is.
            shards (list[ShardLoadView]): Every shard, in the map's order.
            vshards (list[VshardLoadView]): The vshards with the most request statement time, heaviest first (at most
                `top`).
            tenants (list[TenantLoadView]): The tenants with the most request statement time, heaviest first (at most
                `top`).
            step_s (float | None | Unset): The width of a series' step (seconds), if series were asked for.
     """

    since: str
    until: str
    window_s: float
    instances: int
    fleet: WorkMeasures
    shards: list[ShardLoadView]
    vshards: list[VshardLoadView]
    tenants: list[TenantLoadView]
    step_s: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.shard_load_view import ShardLoadView # noqa: PLC0415
        from ..models.tenant_load_view import TenantLoadView # noqa: PLC0415
        from ..models.vshard_load_view import VshardLoadView # noqa: PLC0415
        from ..models.work_measures import WorkMeasures # noqa: PLC0415
        since = self.since

        until = self.until

        window_s = self.window_s

        instances = self.instances

        fleet = self.fleet.to_dict()

        shards = []
        for shards_item_data in self.shards:
            shards_item = shards_item_data.to_dict()
            shards.append(shards_item)



        vshards = []
        for vshards_item_data in self.vshards:
            vshards_item = vshards_item_data.to_dict()
            vshards.append(vshards_item)



        tenants = []
        for tenants_item_data in self.tenants:
            tenants_item = tenants_item_data.to_dict()
            tenants.append(tenants_item)



        step_s: float | None | Unset
        if isinstance(self.step_s, Unset):
            step_s = UNSET
        else:
            step_s = self.step_s


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "since": since,
            "until": until,
            "window_s": window_s,
            "instances": instances,
            "fleet": fleet,
            "shards": shards,
            "vshards": vshards,
            "tenants": tenants,
        })
        if step_s is not UNSET:
            field_dict["step_s"] = step_s

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.shard_load_view import ShardLoadView # noqa: PLC0415
        from ..models.tenant_load_view import TenantLoadView # noqa: PLC0415
        from ..models.vshard_load_view import VshardLoadView # noqa: PLC0415
        from ..models.work_measures import WorkMeasures # noqa: PLC0415
        d = dict(src_dict)
        since = d.pop("since")

        until = d.pop("until")

        window_s = d.pop("window_s")

        instances = d.pop("instances")

        fleet = WorkMeasures.from_dict(d.pop("fleet"))




        shards = []
        _shards = d.pop("shards")
        for shards_item_data in (_shards):
            shards_item = ShardLoadView.from_dict(shards_item_data)



            shards.append(shards_item)


        vshards = []
        _vshards = d.pop("vshards")
        for vshards_item_data in (_vshards):
            vshards_item = VshardLoadView.from_dict(vshards_item_data)



            vshards.append(vshards_item)


        tenants = []
        _tenants = d.pop("tenants")
        for tenants_item_data in (_tenants):
            tenants_item = TenantLoadView.from_dict(tenants_item_data)



            tenants.append(tenants_item)


        def _parse_step_s(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        step_s = _parse_step_s(d.pop("step_s", UNSET))


        load_view = cls(
            since=since,
            until=until,
            window_s=window_s,
            instances=instances,
            fleet=fleet,
            shards=shards,
            vshards=vshards,
            tenants=tenants,
            step_s=step_s,
        )


        load_view.additional_properties = d
        return load_view

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
