from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="QuotaProblem")



@_attrs_define
class QuotaProblem:
    """ The quota a refused write would cross (in a `quota_exceeded` problem).

        Attributes:
            name (str): The quota: `records`, `record_bytes`, `blobs`, `blob_bytes` or `index_entries`. Example: records.
            limit (int): Its limit.
            used (int): What the tenant uses of it, with what instances may still let through.
            requested (int): What the write would add.
     """

    name: str
    limit: int
    used: int
    requested: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name

        limit = self.limit

        used = self.used

        requested = self.requested


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
            "limit": limit,
            "used": used,
            "requested": requested,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        limit = d.pop("limit")

        used = d.pop("used")

        requested = d.pop("requested")

        quota_problem = cls(
            name=name,
            limit=limit,
            used=used,
            requested=requested,
        )


        quota_problem.additional_properties = d
        return quota_problem

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
