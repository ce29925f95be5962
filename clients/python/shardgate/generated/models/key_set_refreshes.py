from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.key_set_refresh import KeySetRefresh





T = TypeVar("T", bound="KeySetRefreshes")



@_attrs_define
class KeySetRefreshes:
    """ The outcome of a refresh, one entry per issuer whose keys are fetched.

        Attributes:
            key_sets (list[KeySetRefresh]): In the order the issuers are configured; empty when no issuer's keys are
                fetched.
     """

    key_sets: list[KeySetRefresh]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.key_set_refresh import KeySetRefresh # noqa: PLC0415
        key_sets = []
        for key_sets_item_data in self.key_sets:
            key_sets_item = key_sets_item_data.to_dict()
            key_sets.append(key_sets_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "key_sets": key_sets,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.key_set_refresh import KeySetRefresh # noqa: PLC0415
        d = dict(src_dict)
        key_sets = []
        _key_sets = d.pop("key_sets")
        for key_sets_item_data in (_key_sets):
            key_sets_item = KeySetRefresh.from_dict(key_sets_item_data)



            key_sets.append(key_sets_item)


        key_set_refreshes = cls(
            key_sets=key_sets,
        )


        key_set_refreshes.additional_properties = d
        return key_set_refreshes

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
