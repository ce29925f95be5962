from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="PageBlobInfoItemsItem")



@_attrs_define
class PageBlobInfoItemsItem:
    """ A blob's description.

        Attributes:
            path (str): Its path.
            size (int): Length in bytes.
            sha256 (str): SHA-256 of its bytes, lowercase hex (the `ETag`, in quotes).
            content_type (str): Media type, as written.
            version (int): 1 on first write, +1 on every overwrite and delete.
            updated_at (str): Last write, RFC 3339.
     """

    path: str
    size: int
    sha256: str
    content_type: str
    version: int
    updated_at: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        path = self.path

        size = self.size

        sha256 = self.sha256

        content_type = self.content_type

        version = self.version

        updated_at = self.updated_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "path": path,
            "size": size,
            "sha256": sha256,
            "content_type": content_type,
            "version": version,
            "updated_at": updated_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        path = d.pop("path")

        size = d.pop("size")

        sha256 = d.pop("sha256")

        content_type = d.pop("content_type")

        version = d.pop("version")

        updated_at = d.pop("updated_at")

        page_blob_info_items_item = cls(
            path=path,
            size=size,
            sha256=sha256,
            content_type=content_type,
            version=version,
            updated_at=updated_at,
        )


        page_blob_info_items_item.additional_properties = d
        return page_blob_info_items_item

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
