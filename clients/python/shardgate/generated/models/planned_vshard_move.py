from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="PlannedVshardMove")



@_attrs_define
class PlannedVshardMove:
    """ A vshard a plan moves.

        Attributes:
            vshard (int): The vshard.
            from_ (str): The shard owning it now.
            to (str): The shard owning it afterwards.
     """

    vshard: int
    from_: str
    to: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        vshard = self.vshard

        from_ = self.from_

        to = self.to


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "vshard": vshard,
            "from": from_,
            "to": to,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        vshard = d.pop("vshard")

        from_ = d.pop("from")

        to = d.pop("to")

        planned_vshard_move = cls(
            vshard=vshard,
            from_=from_,
            to=to,
        )


        planned_vshard_move.additional_properties = d
        return planned_vshard_move

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
