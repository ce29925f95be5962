from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="QuotaLimits")



@_attrs_define
class QuotaLimits:
    """ Quotas: the most a tenant may keep of each part of its usage; `null` (or, in a request, a key
    left out) is unlimited.

        Attributes:
            records (int | None | Unset): Most live records (every collection and distribution). Example: 1000000.
            record_bytes (int | None | Unset): Most bytes of stored record values (the JSON as stored).
            blobs (int | None | Unset): Most live blobs.
            blob_bytes (int | None | Unset): Most bytes of live blobs.
            index_entries (int | None | Unset): Most live index entries.
            collections (int | None | Unset): Most collections holding records (or given a distribution of their own).
            valet_bytes_per_day (int | None | Unset): Most bytes transferred through valet URLs in a UTC day, uploads and
                downloads together.
     """

    records: int | None | Unset = UNSET
    record_bytes: int | None | Unset = UNSET
    blobs: int | None | Unset = UNSET
    blob_bytes: int | None | Unset = UNSET
    index_entries: int | None | Unset = UNSET
    collections: int | None | Unset = UNSET
    valet_bytes_per_day: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        records: int | None | Unset
        if isinstance(self.records, Unset):
            records = UNSET
        else:
            records = self.records

        record_bytes: int | None | Unset
        if isinstance(self.record_bytes, Unset):
            record_bytes = UNSET
        else:
            record_bytes = self.record_bytes

        blobs: int | None | Unset
        if isinstance(self.blobs, Unset):
            blobs = UNSET
        else:
            blobs = self.blobs

        blob_bytes: int | None | Unset
        if isinstance(self.blob_bytes, Unset):
            blob_bytes = UNSET
        else:
            blob_bytes = self.blob_bytes

        index_entries: int | None | Unset
        if isinstance(self.index_entries, Unset):
            index_entries = UNSET
        else:
            index_entries = self.index_entries

        collections: int | None | Unset
        if isinstance(self.collections, Unset):
            collections = UNSET
        else:
            collections = self.collections

        valet_bytes_per_day: int | None | Unset
        if isinstance(self.valet_bytes_per_day, Unset):
            valet_bytes_per_day = UNSET
        else:
            valet_bytes_per_day = self.valet_bytes_per_day


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if records is not UNSET:
            field_dict["records"] = records
        if record_bytes is not UNSET:
            field_dict["record_bytes"] = record_bytes
        if blobs is not UNSET:
            field_dict["blobs"] = blobs
        if blob_bytes is not UNSET:
            field_dict["blob_bytes"] = blob_bytes
        if index_entries is not UNSET:
            field_dict["index_entries"] = index_entries
        if collections is not UNSET:
            field_dict["collections"] = collections
        if valet_bytes_per_day is not UNSET:
            field_dict["valet_bytes_per_day"] = valet_bytes_per_day

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_records(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        records = _parse_records(d.pop("records", UNSET))


        def _parse_record_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        record_bytes = _parse_record_bytes(d.pop("record_bytes", UNSET))


        def _parse_blobs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        blobs = _parse_blobs(d.pop("blobs", UNSET))


        def _parse_blob_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        blob_bytes = _parse_blob_bytes(d.pop("blob_bytes", UNSET))


        def _parse_index_entries(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        index_entries = _parse_index_entries(d.pop("index_entries", UNSET))


        def _parse_collections(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        collections = _parse_collections(d.pop("collections", UNSET))


        def _parse_valet_bytes_per_day(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        valet_bytes_per_day = _parse_valet_bytes_per_day(d.pop("valet_bytes_per_day", UNSET))


        quota_limits = cls(
            records=records,
            record_bytes=record_bytes,
            blobs=blobs,
            blob_bytes=blob_bytes,
            index_entries=index_entries,
            collections=collections,
            valet_bytes_per_day=valet_bytes_per_day,
        )

        return quota_limits

