from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="PlannedRangeMove")



@_attrs_define
class PlannedRangeMove:
    """ A range of a range-distributed collection a plan moves (off a draining shard): the keys
    from `from_key` up to the collection's next bound.

        Attributes:
            tenant (str): The tenant.
            collection (str): The collection.
            from_key (str): The range's first key.
            from_ (str): The shard holding it now.
            to (str): The shard holding it afterwards.
     """

    tenant: str
    collection: str
    from_key: str
    from_: str
    to: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        tenant = self.tenant

        collection = self.collection

        from_key = self.from_key

        from_ = self.from_

        to = self.to


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "tenant": tenant,
            "collection": collection,
            "from_key": from_key,
            "from": from_,
            "to": to,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        tenant = d.pop("tenant")

        collection = d.pop("collection")

        from_key = d.pop("from_key")

        from_ = d.pop("from")

        to = d.pop("to")

        planned_range_move = cls(
            tenant=tenant,
            collection=collection,
            from_key=from_key,
            from_=from_,
            to=to,
        )


        planned_range_move.additional_properties = d
        return planned_range_move

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
