from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="TenantHoldings")



@_attrs_define
class TenantHoldings:
    """ What a tenant holds over every shard.

        Attributes:
            tenant (str): The tenant.
            records (int): Live records (every collection, every distribution).
            blobs (int): Live blobs.
            blob_bytes (int): Their bytes.
            index_entries (int): Live index entries (of every index of its collections).
            complete (bool): Whether every shard answered; when not, the counts miss the parts of `unreachable_shards`.
            unreachable_shards (list[str]): Shards that did not answer in time (or are offline).
     """

    tenant: str
    records: int
    blobs: int
    blob_bytes: int
    index_entries: int
    complete: bool
    unreachable_shards: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        tenant = self.tenant

        records = self.records

        blobs = self.blobs

        blob_bytes = self.blob_bytes

        index_entries = self.index_entries

        complete = self.complete

        unreachable_shards = self.unreachable_shards




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "tenant": tenant,
            "records": records,
            "blobs": blobs,
            "blob_bytes": blob_bytes,
            "index_entries": index_entries,
            "complete": complete,
            "unreachable_shards": unreachable_shards,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        tenant = d.pop("tenant")

        records = d.pop("records")

        blobs = d.pop("blobs")

        blob_bytes = d.pop("blob_bytes")

        index_entries = d.pop("index_entries")

        complete = d.pop("complete")

        unreachable_shards = cast(list[str], d.pop("unreachable_shards"))


        tenant_holdings = cls(
            tenant=tenant,
            records=records,
            blobs=blobs,
            blob_bytes=blob_bytes,
            index_entries=index_entries,
            complete=complete,
            unreachable_shards=unreachable_shards,
        )


        tenant_holdings.additional_properties = d
        return tenant_holdings

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
