from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.shard_failure_reason import ShardFailureReason






T = TypeVar("T", bound="ShardFailureView")



@_attrs_define
class ShardFailureView:
    """ A shard a listing could not read.

        Attributes:
            shard (str): The shard.
            code (str): The problem code it would have answered with alone (`shard_offline`,
                `shard_unavailable`, `shard_busy`, ...).
            reason (ShardFailureReason): Why a shard of a listing did not answer, as a tenant sees it in `_shards`: a stable
                code,
                never the database's own words or an operator's note (those go to the server log).
     """

    shard: str
    code: str
    reason: ShardFailureReason
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        shard = self.shard

        code = self.code

        reason = self.reason.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "shard": shard,
            "code": code,
            "reason": reason,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        shard = d.pop("shard")

        code = d.pop("code")

        reason = ShardFailureReason(d.pop("reason"))




        shard_failure_view = cls(
            shard=shard,
            code=code,
            reason=reason,
        )


        shard_failure_view.additional_properties = d
        return shard_failure_view

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
