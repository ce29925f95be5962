from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.quota_use import QuotaUse





T = TypeVar("T", bound="QuotaUses")



@_attrs_define
class QuotaUses:
    """ Each of a tenant's quotas beside the usage it limits.

        Attributes:
            records (QuotaUse): One quota beside what it limits.
            record_bytes (QuotaUse): One quota beside what it limits.
            blobs (QuotaUse): One quota beside what it limits.
            blob_bytes (QuotaUse): One quota beside what it limits.
            index_entries (QuotaUse): One quota beside what it limits.
            collections (QuotaUse): One quota beside what it limits.
            valet_bytes_per_day (QuotaUse): One quota beside what it limits.
     """

    records: QuotaUse
    record_bytes: QuotaUse
    blobs: QuotaUse
    blob_bytes: QuotaUse
    index_entries: QuotaUse
    collections: QuotaUse
    valet_bytes_per_day: QuotaUse
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.quota_use import QuotaUse # noqa: PLC0415
        records = self.records.to_dict()

        record_bytes = self.record_bytes.to_dict()

        blobs = self.blobs.to_dict()

        blob_bytes = self.blob_bytes.to_dict()

        index_entries = self.index_entries.to_dict()

        collections = self.collections.to_dict()

        valet_bytes_per_day = self.valet_bytes_per_day.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "records": records,
            "record_bytes": record_bytes,
            "blobs": blobs,
            "blob_bytes": blob_bytes,
            "index_entries": index_entries,
            "collections": collections,
            "valet_bytes_per_day": valet_bytes_per_day,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quota_use import QuotaUse # noqa: PLC0415
        d = dict(src_dict)
        records = QuotaUse.from_dict(d.pop("records"))




        record_bytes = QuotaUse.from_dict(d.pop("record_bytes"))




        blobs = QuotaUse.from_dict(d.pop("blobs"))




        blob_bytes = QuotaUse.from_dict(d.pop("blob_bytes"))




        index_entries = QuotaUse.from_dict(d.pop("index_entries"))




        collections = QuotaUse.from_dict(d.pop("collections"))




        valet_bytes_per_day = QuotaUse.from_dict(d.pop("valet_bytes_per_day"))




        quota_uses = cls(
            records=records,
            record_bytes=record_bytes,
            blobs=blobs,
            blob_bytes=blob_bytes,
            index_entries=index_entries,
            collections=collections,
            valet_bytes_per_day=valet_bytes_per_day,
        )


        quota_uses.additional_properties = d
        return quota_uses

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
