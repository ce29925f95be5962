from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="UsageCounts")



@_attrs_define
class UsageCounts:
    """ What a tenant stores: its live data, as the shards keep it exact (changed in the same
    transaction as every write).

        Attributes:
            records (int): Live records, every collection and distribution (deleted ones are not counted).
            record_bytes (int): Their stored values' bytes (the JSON as stored, in UTF-8).
            blobs (int): Live blobs (uploads in progress are not counted).
            blob_bytes (int): Their bytes.
            index_entries (int): Live index entries of every index of its collections.
     """

    records: int
    record_bytes: int
    blobs: int
    blob_bytes: int
    index_entries: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        records = self.records

        record_bytes = self.record_bytes

        blobs = self.blobs

        blob_bytes = self.blob_bytes

        index_entries = self.index_entries


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "records": records,
            "record_bytes": record_bytes,
            "blobs": blobs,
            "blob_bytes": blob_bytes,
            "index_entries": index_entries,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        records = d.pop("records")

        record_bytes = d.pop("record_bytes")

        blobs = d.pop("blobs")

        blob_bytes = d.pop("blob_bytes")

        index_entries = d.pop("index_entries")

        usage_counts = cls(
            records=records,
            record_bytes=record_bytes,
            blobs=blobs,
            blob_bytes=blob_bytes,
            index_entries=index_entries,
        )


        usage_counts.additional_properties = d
        return usage_counts

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
