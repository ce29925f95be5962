from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.usage_counts import UsageCounts





T = TypeVar("T", bound="ShardUsage")



@_attrs_define
class ShardUsage:
    """ One shard's part of a tenant's usage.

        Attributes:
            shard (str): The shard.
            usage (UsageCounts): What a tenant stores: its live data, as the shards keep it exact (changed in the same
                transaction as every write).
     """

    shard: str
    usage: UsageCounts
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.usage_counts import UsageCounts # noqa: PLC0415
        shard = self.shard

        usage = self.usage.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "shard": shard,
            "usage": usage,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.usage_counts import UsageCounts # noqa: PLC0415
        d = dict(src_dict)
        shard = d.pop("shard")

        usage = UsageCounts.from_dict(d.pop("usage"))




        shard_usage = cls(
            shard=shard,
            usage=usage,
        )


        shard_usage.additional_properties = d
        return shard_usage

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
