from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.quota_uses import QuotaUses
  from ..models.shard_usage import ShardUsage
  from ..models.usage_counts import UsageCounts





T = TypeVar("T", bound="TenantUsage")



@_attrs_define
class TenantUsage:
    """ A tenant's usage over the fleet.

        Attributes:
            tenant (str): The tenant.
            usage (UsageCounts): What a tenant stores: its live data, as the shards keep it exact (changed in the same
                transaction as every write).
            shards (list[ShardUsage]): Each shard's part, for the shards holding some of it.
            complete (bool): Whether every shard answered; when not, `usage` misses the parts of `unreachable_shards`.
            unreachable_shards (list[str]): Shards that did not answer in time (or are offline).
            quotas (QuotaUses): Each of a tenant's quotas beside the usage it limits.
     """

    tenant: str
    usage: UsageCounts
    shards: list[ShardUsage]
    complete: bool
    unreachable_shards: list[str]
    quotas: QuotaUses
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.quota_uses import QuotaUses # noqa: PLC0415
        from ..models.shard_usage import ShardUsage # noqa: PLC0415
        from ..models.usage_counts import UsageCounts # noqa: PLC0415
        tenant = self.tenant

        usage = self.usage.to_dict()

        shards = []
        for shards_item_data in self.shards:
            shards_item = shards_item_data.to_dict()
            shards.append(shards_item)



        complete = self.complete

        unreachable_shards = self.unreachable_shards



        quotas = self.quotas.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "tenant": tenant,
            "usage": usage,
            "shards": shards,
            "complete": complete,
            "unreachable_shards": unreachable_shards,
            "quotas": quotas,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quota_uses import QuotaUses # noqa: PLC0415
        from ..models.shard_usage import ShardUsage # noqa: PLC0415
        from ..models.usage_counts import UsageCounts # noqa: PLC0415
        d = dict(src_dict)
        tenant = d.pop("tenant")

        usage = UsageCounts.from_dict(d.pop("usage"))




        shards = []
        _shards = d.pop("shards")
        for shards_item_data in (_shards):
            shards_item = ShardUsage.from_dict(shards_item_data)



            shards.append(shards_item)


        complete = d.pop("complete")

        unreachable_shards = cast(list[str], d.pop("unreachable_shards"))


        quotas = QuotaUses.from_dict(d.pop("quotas"))




        tenant_usage = cls(
            tenant=tenant,
            usage=usage,
            shards=shards,
            complete=complete,
            unreachable_shards=unreachable_shards,
            quotas=quotas,
        )


        tenant_usage.additional_properties = d
        return tenant_usage

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
