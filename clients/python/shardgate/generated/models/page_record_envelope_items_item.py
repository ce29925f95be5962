from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="PageRecordEnvelopeItemsItem")



@_attrs_define
class PageRecordEnvelopeItemsItem:
    """ A record as the API returns it.

        Attributes:
            key (str): The record's key.
            version (int): Its version (also the `ETag`): 1 on create, +1 on every write or delete.
            updated_at (str): Time of the last write, RFC 3339.
            value (Any): The stored JSON value, as written: any JSON value (object, array, string, number,
                boolean or null).
     """

    key: str
    version: int
    updated_at: str
    value: Any
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        key = self.key

        version = self.version

        updated_at = self.updated_at

        value = self.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "key": key,
            "version": version,
            "updated_at": updated_at,
            "value": value,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        key = d.pop("key")

        version = d.pop("version")

        updated_at = d.pop("updated_at")

        value = d.pop("value")

        page_record_envelope_items_item = cls(
            key=key,
            version=version,
            updated_at=updated_at,
            value=value,
        )


        page_record_envelope_items_item.additional_properties = d
        return page_record_envelope_items_item

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
