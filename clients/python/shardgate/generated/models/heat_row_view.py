from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="HeatRowView")



@_attrs_define
class HeatRowView:
    """ One row of the heat map.

        Attributes:
            shard (str): The shard that owns the vshard now (for a `null` vshard, the shard itself).
            values (list[float]): The measure in each column.
            vshard (int | None | Unset): The vshard; `null` for the row of a shard's load that no vshard placed (pinned
                tenants'
                data, range-distributed collections).
     """

    shard: str
    values: list[float]
    vshard: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        shard = self.shard

        values = self.values



        vshard: int | None | Unset
        if isinstance(self.vshard, Unset):
            vshard = UNSET
        else:
            vshard = self.vshard


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "shard": shard,
            "values": values,
        })
        if vshard is not UNSET:
            field_dict["vshard"] = vshard

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        shard = d.pop("shard")

        values = cast(list[float], d.pop("values"))


        def _parse_vshard(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        vshard = _parse_vshard(d.pop("vshard", UNSET))


        heat_row_view = cls(
            shard=shard,
            values=values,
            vshard=vshard,
        )


        heat_row_view.additional_properties = d
        return heat_row_view

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
