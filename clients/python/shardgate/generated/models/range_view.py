from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="RangeView")



@_attrs_define
class RangeView:
    """ One range of a range-distributed collection.

        Attributes:
            from_ (str): The smallest key of the range; the next range's `from` ends it. The first range starts
                at `""`.
            shard (str): The shard holding the range.
     """

    from_: str
    shard: str





    def to_dict(self) -> dict[str, Any]:
        from_ = self.from_

        shard = self.shard


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "from": from_,
            "shard": shard,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        from_ = d.pop("from")

        shard = d.pop("shard")

        range_view = cls(
            from_=from_,
            shard=shard,
        )

        return range_view

