from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.route_explanation_distribution import RouteExplanationDistribution
from ..models.route_explanation_strategy import RouteExplanationStrategy
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="RouteExplanation")



@_attrs_define
class RouteExplanation:
    """ A routing decision, explained.

        Attributes:
            tenant (str): Tenant.
            distribution (RouteExplanationDistribution): The collection's distribution (`tenant`: on the tenant's home
                shard). Example: tenant.
            strategy (RouteExplanationStrategy): `lookup` (the tenant is pinned), `hash` (`h(tenant)` picks the vshard),
                `record_hash`
                (the record of a hash-distributed collection: `h(tenant, collection, key)` picks it) or
                `range` (the record of a range-distributed collection: the range holding the key). Example: hash.
            vshard (int): The vshard `h(tenant)` picks, or for a record of a distributed collection
                `h(tenant, collection, key)` (`mod vshard_count`).
            shard (str): The physical shard.
            shard_state (str): The shard's state. Example: active.
            epoch (int): The map epoch of this decision.
            collection (None | str | Unset): Collection, if given.
            key (None | str | Unset): Key, if given.
     """

    tenant: str
    distribution: RouteExplanationDistribution
    strategy: RouteExplanationStrategy
    vshard: int
    shard: str
    shard_state: str
    epoch: int
    collection: None | str | Unset = UNSET
    key: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        tenant = self.tenant

        distribution = self.distribution.value

        strategy = self.strategy.value

        vshard = self.vshard

        shard = self.shard

        shard_state = self.shard_state

        epoch = self.epoch

        collection: None | str | Unset
        if isinstance(self.collection, Unset):
            collection = UNSET
        else:
            collection = self.collection

        key: None | str | Unset
        if isinstance(self.key, Unset):
            key = UNSET
        else:
            key = self.key


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "tenant": tenant,
            "distribution": distribution,
            "strategy": strategy,
            "vshard": vshard,
            "shard": shard,
            "shard_state": shard_state,
            "epoch": epoch,
        })
        if collection is not UNSET:
            field_dict["collection"] = collection
        if key is not UNSET:
            field_dict["key"] = key

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        tenant = d.pop("tenant")

        distribution = RouteExplanationDistribution(d.pop("distribution"))




        strategy = RouteExplanationStrategy(d.pop("strategy"))




        vshard = d.pop("vshard")

        shard = d.pop("shard")

        shard_state = d.pop("shard_state")

        epoch = d.pop("epoch")

        def _parse_collection(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        collection = _parse_collection(d.pop("collection", UNSET))


        def _parse_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        key = _parse_key(d.pop("key", UNSET))


        route_explanation = cls(
            tenant=tenant,
            distribution=distribution,
            strategy=strategy,
            vshard=vshard,
            shard=shard,
            shard_state=shard_state,
            epoch=epoch,
            collection=collection,
            key=key,
        )


        route_explanation.additional_properties = d
        return route_explanation

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
