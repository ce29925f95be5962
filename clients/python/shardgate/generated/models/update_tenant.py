from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.update_tenant_tier_type_1 import UpdateTenantTierType1
from ..models.update_tenant_tier_type_2_type_1 import UpdateTenantTierType2Type1
from ..models.update_tenant_tier_type_3_type_1 import UpdateTenantTierType3Type1
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.rate_limit import RateLimit
  from ..models.tenant_quotas import TenantQuotas





T = TypeVar("T", bound="UpdateTenant")



@_attrs_define
class UpdateTenant:
    """ Body of `PATCH /v1/admin/tenants/{id}`. Moving a tenant to another shard is a separate
    operation (it moves data).

        Attributes:
            name (None | str | Unset): New display name.
            tier (None | Unset | UpdateTenantTierType1 | UpdateTenantTierType2Type1 | UpdateTenantTierType3Type1): New tier.
            rate_limit (None | RateLimit | Unset):
            quotas (None | TenantQuotas | Unset):
     """

    name: None | str | Unset = UNSET
    tier: None | Unset | UpdateTenantTierType1 | UpdateTenantTierType2Type1 | UpdateTenantTierType3Type1 = UNSET
    rate_limit: None | RateLimit | Unset = UNSET
    quotas: None | TenantQuotas | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.rate_limit import RateLimit # noqa: PLC0415
        from ..models.tenant_quotas import TenantQuotas # noqa: PLC0415
        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        tier: None | str | Unset
        if isinstance(self.tier, Unset):
            tier = UNSET
        elif isinstance(self.tier, UpdateTenantTierType1):
            tier = self.tier.value
        elif isinstance(self.tier, UpdateTenantTierType2Type1):
            tier = self.tier.value
        elif isinstance(self.tier, UpdateTenantTierType3Type1):
            tier = self.tier.value
        else:
            tier = self.tier

        rate_limit: dict[str, Any] | None | Unset
        if isinstance(self.rate_limit, Unset):
            rate_limit = UNSET
        elif isinstance(self.rate_limit, RateLimit):
            rate_limit = self.rate_limit.to_dict()
        else:
            rate_limit = self.rate_limit

        quotas: dict[str, Any] | None | Unset
        if isinstance(self.quotas, Unset):
            quotas = UNSET
        elif isinstance(self.quotas, TenantQuotas):
            quotas = self.quotas.to_dict()
        else:
            quotas = self.quotas


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if name is not UNSET:
            field_dict["name"] = name
        if tier is not UNSET:
            field_dict["tier"] = tier
        if rate_limit is not UNSET:
            field_dict["rate_limit"] = rate_limit
        if quotas is not UNSET:
            field_dict["quotas"] = quotas

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.rate_limit import RateLimit # noqa: PLC0415
        from ..models.tenant_quotas import TenantQuotas # noqa: PLC0415
        d = dict(src_dict)
        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))


        def _parse_tier(data: object) -> None | Unset | UpdateTenantTierType1 | UpdateTenantTierType2Type1 | UpdateTenantTierType3Type1:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                tier_type_1 = UpdateTenantTierType1(data)



                return tier_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                tier_type_2_type_1 = UpdateTenantTierType2Type1(data)



                return tier_type_2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                tier_type_3_type_1 = UpdateTenantTierType3Type1(data)



                return tier_type_3_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UpdateTenantTierType1 | UpdateTenantTierType2Type1 | UpdateTenantTierType3Type1, data)

        tier = _parse_tier(d.pop("tier", UNSET))


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


        def _parse_quotas(data: object) -> None | TenantQuotas | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                quotas_type_1 = TenantQuotas.from_dict(data)



                return quotas_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TenantQuotas | Unset, data)

        quotas = _parse_quotas(d.pop("quotas", UNSET))


        update_tenant = cls(
            name=name,
            tier=tier,
            rate_limit=rate_limit,
            quotas=quotas,
        )

        return update_tenant

