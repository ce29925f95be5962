from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.quota_source import QuotaSource
from ..models.tier_quotas_tier import TierQuotasTier
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.quota_limits import QuotaLimits





T = TypeVar("T", bound="TierQuotas")



@_attrs_define
class TierQuotas:
    """ A tier's quotas.

        Attributes:
            tier (TierQuotasTier): The tier. Example: free.
            quotas (QuotaLimits): Quotas: the most a tenant may keep of each part of its usage; `null` (or, in a request, a
                key
                left out) is unlimited.
            source (QuotaSource): Where a tier's quotas in force come from.
            configured (QuotaLimits): Quotas: the most a tenant may keep of each part of its usage; `null` (or, in a
                request, a key
                left out) is unlimited.
            updated_at (None | str | Unset): When the quotas were set through this API, RFC 3339 (null: they were not).
     """

    tier: TierQuotasTier
    quotas: QuotaLimits
    source: QuotaSource
    configured: QuotaLimits
    updated_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.quota_limits import QuotaLimits # noqa: PLC0415
        tier = self.tier.value

        quotas = self.quotas.to_dict()

        source = self.source.value

        configured = self.configured.to_dict()

        updated_at: None | str | Unset
        if isinstance(self.updated_at, Unset):
            updated_at = UNSET
        else:
            updated_at = self.updated_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "tier": tier,
            "quotas": quotas,
            "source": source,
            "configured": configured,
        })
        if updated_at is not UNSET:
            field_dict["updated_at"] = updated_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quota_limits import QuotaLimits # noqa: PLC0415
        d = dict(src_dict)
        tier = TierQuotasTier(d.pop("tier"))




        quotas = QuotaLimits.from_dict(d.pop("quotas"))




        source = QuotaSource(d.pop("source"))




        configured = QuotaLimits.from_dict(d.pop("configured"))




        def _parse_updated_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        updated_at = _parse_updated_at(d.pop("updated_at", UNSET))


        tier_quotas = cls(
            tier=tier,
            quotas=quotas,
            source=source,
            configured=configured,
            updated_at=updated_at,
        )


        tier_quotas.additional_properties = d
        return tier_quotas

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
