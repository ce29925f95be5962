from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="SplitRequest")



@_attrs_define
class SplitRequest:
    """ Body of `POST /v1/admin/tenants/{id}/collections/{collection}/split`.

        Attributes:
            at (str): The first key of the new range: the keys from here up to the next range's `from` go to
                `shard`. If a range starts here already (`""` is the first range's), that whole range
                goes to `shard`.
            shard (str): The shard that takes the keys (registered and `active`).
     """

    at: str
    shard: str





    def to_dict(self) -> dict[str, Any]:
        at = self.at

        shard = self.shard


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "at": at,
            "shard": shard,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = d.pop("at")

        shard = d.pop("shard")

        split_request = cls(
            at=at,
            shard=shard,
        )

        return split_request

