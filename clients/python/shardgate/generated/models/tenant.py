from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.tenant_tier import TenantTier
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.quota_limits import QuotaLimits
  from ..models.rate_limit import RateLimit
  from ..models.tenant_quotas import TenantQuotas
  from ..models.usage_counts import UsageCounts





T = TypeVar("T", bound="Tenant")



@_attrs_define
class Tenant:
    """ A tenant.

        Attributes:
            id (str): Tenant id.
            name (str): Display name.
            tier (TenantTier): `free`, `standard` or `premium`. Example: standard.
            pinned (bool): Whether the home shard is a pin (lookup) rather than the hash.
            effective_rate_limit (RateLimit): A rate limit: `per_second` requests per second on average, up to `burst` at
                once.
            effective_quotas (QuotaLimits): Quotas: the most a tenant may keep of each part of its usage; `null` (or, in a
                request, a key
                left out) is unlimited.
            created_at (str): Creation time, RFC 3339.
            updated_at (str): Last change, RFC 3339.
            shard (None | str | Unset): The tenant's home shard (where its records live).
            rate_limit (None | RateLimit | Unset):
            quotas (None | TenantQuotas | Unset):
            usage (None | Unset | UsageCounts):
            usage_complete (bool | None | Unset): Whether every shard answered the read of `usage` (only with `usage`).
     """

    id: str
    name: str
    tier: TenantTier
    pinned: bool
    effective_rate_limit: RateLimit
    effective_quotas: QuotaLimits
    created_at: str
    updated_at: str
    shard: None | str | Unset = UNSET
    rate_limit: None | RateLimit | Unset = UNSET
    quotas: None | TenantQuotas | Unset = UNSET
    usage: None | Unset | UsageCounts = UNSET
    usage_complete: bool | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.quota_limits import QuotaLimits # noqa: PLC0415
        from ..models.rate_limit import RateLimit # noqa: PLC0415
        from ..models.tenant_quotas import TenantQuotas # noqa: PLC0415
        from ..models.usage_counts import UsageCounts # noqa: PLC0415
        id = self.id

        name = self.name

        tier = self.tier.value

        pinned = self.pinned

        effective_rate_limit = self.effective_rate_limit.to_dict()

        effective_quotas = self.effective_quotas.to_dict()

        created_at = self.created_at

        updated_at = self.updated_at

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

        quotas: dict[str, Any] | None | Unset
        if isinstance(self.quotas, Unset):
            quotas = UNSET
        elif isinstance(self.quotas, TenantQuotas):
            quotas = self.quotas.to_dict()
        else:
            quotas = self.quotas

        usage: dict[str, Any] | None | Unset
        if isinstance(self.usage, Unset):
            usage = UNSET
        elif isinstance(self.usage, UsageCounts):
            usage = self.usage.to_dict()
        else:
            usage = self.usage

        usage_complete: bool | None | Unset
        if isinstance(self.usage_complete, Unset):
            usage_complete = UNSET
        else:
            usage_complete = self.usage_complete


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "name": name,
            "tier": tier,
            "pinned": pinned,
            "effective_rate_limit": effective_rate_limit,
            "effective_quotas": effective_quotas,
            "created_at": created_at,
            "updated_at": updated_at,
        })
        if shard is not UNSET:
            field_dict["shard"] = shard
        if rate_limit is not UNSET:
            field_dict["rate_limit"] = rate_limit
        if quotas is not UNSET:
            field_dict["quotas"] = quotas
        if usage is not UNSET:
            field_dict["usage"] = usage
        if usage_complete is not UNSET:
            field_dict["usage_complete"] = usage_complete

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quota_limits import QuotaLimits # noqa: PLC0415
        from ..models.rate_limit import RateLimit # noqa: PLC0415
        from ..models.tenant_quotas import TenantQuotas # noqa: PLC0415
        from ..models.usage_counts import UsageCounts # noqa: PLC0415
        d = dict(src_dict)
        id = d.pop("id")

        name = d.pop("name")

        tier = TenantTier(d.pop("tier"))




        pinned = d.pop("pinned")

        effective_rate_limit = RateLimit.from_dict(d.pop("effective_rate_limit"))




        effective_quotas = QuotaLimits.from_dict(d.pop("effective_quotas"))




        created_at = d.pop("created_at")

        updated_at = d.pop("updated_at")

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


        def _parse_usage(data: object) -> None | Unset | UsageCounts:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                usage_type_1 = UsageCounts.from_dict(data)



                return usage_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UsageCounts, data)

        usage = _parse_usage(d.pop("usage", UNSET))


        def _parse_usage_complete(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        usage_complete = _parse_usage_complete(d.pop("usage_complete", UNSET))


        tenant = cls(
            id=id,
            name=name,
            tier=tier,
            pinned=pinned,
            effective_rate_limit=effective_rate_limit,
            effective_quotas=effective_quotas,
            created_at=created_at,
            updated_at=updated_at,
            shard=shard,
            rate_limit=rate_limit,
            quotas=quotas,
            usage=usage,
            usage_complete=usage_complete,
        )


        tenant.additional_properties = d
        return tenant

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
