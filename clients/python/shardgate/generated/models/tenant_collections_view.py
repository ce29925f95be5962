from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.collection_summary import CollectionSummary





T = TypeVar("T", bound="TenantCollectionsView")



@_attrs_define
class TenantCollectionsView:
    """ A tenant's collections.

        Attributes:
            tenant (str): The tenant.
            collections (list[CollectionSummary]): Its collections, by name (byte order).
            complete (bool): Whether every shard read answered; when not, `records` misses the parts of
                `unreachable_shards`, and if the tenant's home shard is among them, the collections
                distributed `tenant` are missing.
            unreachable_shards (list[str]): Shards that did not answer in time (or are offline).
     """

    tenant: str
    collections: list[CollectionSummary]
    complete: bool
    unreachable_shards: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.collection_summary import CollectionSummary # noqa: PLC0415
        tenant = self.tenant

        collections = []
        for collections_item_data in self.collections:
            collections_item = collections_item_data.to_dict()
            collections.append(collections_item)



        complete = self.complete

        unreachable_shards = self.unreachable_shards




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "tenant": tenant,
            "collections": collections,
            "complete": complete,
            "unreachable_shards": unreachable_shards,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.collection_summary import CollectionSummary # noqa: PLC0415
        d = dict(src_dict)
        tenant = d.pop("tenant")

        collections = []
        _collections = d.pop("collections")
        for collections_item_data in (_collections):
            collections_item = CollectionSummary.from_dict(collections_item_data)



            collections.append(collections_item)


        complete = d.pop("complete")

        unreachable_shards = cast(list[str], d.pop("unreachable_shards"))


        tenant_collections_view = cls(
            tenant=tenant,
            collections=collections,
            complete=complete,
            unreachable_shards=unreachable_shards,
        )


        tenant_collections_view.additional_properties = d
        return tenant_collections_view

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
