from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="VshardRange")



@_attrs_define
class VshardRange:
    """ A run of consecutive vshards owned by one shard.

        Attributes:
            first (int): First vshard of the run.
            last (int): Last vshard of the run (inclusive).
            shard (str): Owning shard.
     """

    first: int
    last: int
    shard: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        first = self.first

        last = self.last

        shard = self.shard


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "first": first,
            "last": last,
            "shard": shard,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        first = d.pop("first")

        last = d.pop("last")

        shard = d.pop("shard")

        vshard_range = cls(
            first=first,
            last=last,
            shard=shard,
        )


        vshard_range.additional_properties = d
        return vshard_range

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
