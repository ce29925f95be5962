from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="UsageDayLine")



@_attrs_define
class UsageDayLine:
    """ One line of the daily usage export (`GET /v1/admin/usage?day=`, JSON lines): what one tenant
    used on the day.

        Attributes:
            day (str): The UTC day, `YYYY-MM-DD`.
            tenant (str): The tenant.
            storage_byte_hours (int): Bytes of records and blobs held, times the hours held: each hourly sample adds what
                the
                tenant held then, for one hour.
            requests (int): Requests made with the tenant's tokens and through its valet URLs.
            bytes_read (int): Bytes of the response bodies sent for those requests (valet downloads not included).
            bytes_written (int): Bytes of the request bodies received with them (valet uploads not included).
            valet_bytes (int): Bytes moved through the tenant's valet URLs, uploads and downloads together.
     """

    day: str
    tenant: str
    storage_byte_hours: int
    requests: int
    bytes_read: int
    bytes_written: int
    valet_bytes: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        day = self.day

        tenant = self.tenant

        storage_byte_hours = self.storage_byte_hours

        requests = self.requests

        bytes_read = self.bytes_read

        bytes_written = self.bytes_written

        valet_bytes = self.valet_bytes


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "day": day,
            "tenant": tenant,
            "storage_byte_hours": storage_byte_hours,
            "requests": requests,
            "bytes_read": bytes_read,
            "bytes_written": bytes_written,
            "valet_bytes": valet_bytes,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        day = d.pop("day")

        tenant = d.pop("tenant")

        storage_byte_hours = d.pop("storage_byte_hours")

        requests = d.pop("requests")

        bytes_read = d.pop("bytes_read")

        bytes_written = d.pop("bytes_written")

        valet_bytes = d.pop("valet_bytes")

        usage_day_line = cls(
            day=day,
            tenant=tenant,
            storage_byte_hours=storage_byte_hours,
            requests=requests,
            bytes_read=bytes_read,
            bytes_written=bytes_written,
            valet_bytes=valet_bytes,
        )


        usage_day_line.additional_properties = d
        return usage_day_line

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
