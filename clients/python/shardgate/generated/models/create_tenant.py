from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.create_tenant_tier_type_1 import CreateTenantTierType1
from ..models.create_tenant_tier_type_2_type_1 import CreateTenantTierType2Type1
from ..models.create_tenant_tier_type_3_type_1 import CreateTenantTierType3Type1
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.rate_limit import RateLimit





T = TypeVar("T", bound="CreateTenant")



@_attrs_define
class CreateTenant:
    """ Body of `POST /v1/admin/tenants`.

        Attributes:
            id (str): Tenant id: `[a-z0-9][a-z0-9-]{0,62}`. Example: acme.
            name (None | str | Unset): Display name (default: the id).
            tier (CreateTenantTierType1 | CreateTenantTierType2Type1 | CreateTenantTierType3Type1 | None | Unset): Tier
                (default `standard`). Example: standard.
            shard (None | str | Unset): Pin the tenant to this shard (lookup strategy) instead of hashing it.
            rate_limit (None | RateLimit | Unset):
     """

    id: str
    name: None | str | Unset = UNSET
    tier: CreateTenantTierType1 | CreateTenantTierType2Type1 | CreateTenantTierType3Type1 | None | Unset = UNSET
    shard: None | str | Unset = UNSET
    rate_limit: None | RateLimit | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.rate_limit import RateLimit # noqa: PLC0415
        id = self.id

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        tier: None | str | Unset
        if isinstance(self.tier, Unset):
            tier = UNSET
        elif isinstance(self.tier, CreateTenantTierType1):
            tier = self.tier.value
        elif isinstance(self.tier, CreateTenantTierType2Type1):
            tier = self.tier.value
        elif isinstance(self.tier, CreateTenantTierType3Type1):
            tier = self.tier.value
        else:
            tier = self.tier

        shard: None | str | Unset
        if isinstance(self.shard, Unset):
            shard = UNSET
        else:
            shard = self.shard

        rate_limit: dict[str, Any] | None | Unset
        if isinstance(self.rate_limit, Unset):
            rate_limit = UNSET
        elif isinstance(self.rate_limit, RateLimit):
            rate_limit = self.rate_limit.to_dict()
        else:
            rate_limit = self.rate_limit


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
        })
        if name is not UNSET:
            field_dict["name"] = name
        if tier is not UNSET:
            field_dict["tier"] = tier
        if shard is not UNSET:
            field_dict["shard"] = shard
        if rate_limit is not UNSET:
            field_dict["rate_limit"] = rate_limit

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.rate_limit import RateLimit # noqa: PLC0415
        d = dict(src_dict)
        id = d.pop("id")

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))


        def _parse_tier(data: object) -> CreateTenantTierType1 | CreateTenantTierType2Type1 | CreateTenantTierType3Type1 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                tier_type_1 = CreateTenantTierType1(data)



                return tier_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                tier_type_2_type_1 = CreateTenantTierType2Type1(data)



                return tier_type_2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                tier_type_3_type_1 = CreateTenantTierType3Type1(data)



                return tier_type_3_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CreateTenantTierType1 | CreateTenantTierType2Type1 | CreateTenantTierType3Type1 | None | Unset, data)

        tier = _parse_tier(d.pop("tier", UNSET))


        def _parse_shard(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        shard = _parse_shard(d.pop("shard", UNSET))


        def _parse_rate_limit(data: object) -> None | RateLimit | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                rate_limit_type_1 = RateLimit.from_dict(data)



                return rate_limit_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RateLimit | Unset, data)

        rate_limit = _parse_rate_limit(d.pop("rate_limit", UNSET))


        create_tenant = cls(
            id=id,
            name=name,
            tier=tier,
            shard=shard,
            rate_limit=rate_limit,
        )

        return create_tenant

