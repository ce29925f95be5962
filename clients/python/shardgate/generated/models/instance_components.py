from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.instance_component import InstanceComponent





T = TypeVar("T", bound="InstanceComponents")



@_attrs_define
class InstanceComponents:
    """ Each component's readiness when it last reported: `catalog`, `cache`, `rate_limits` and
    one entry per shard.

     """

    additional_properties: dict[str, InstanceComponent] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.instance_component import InstanceComponent # noqa: PLC0415
        
        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            field_dict[prop_name] = prop.to_dict()


        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.instance_component import InstanceComponent # noqa: PLC0415
        d = dict(src_dict)
        instance_components = cls(
        )


        additional_properties = {}
        for prop_name, prop_dict in d.items():
            additional_property = InstanceComponent.from_dict(prop_dict)



            additional_properties[prop_name] = additional_property

        instance_components.additional_properties = additional_properties
        return instance_components

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> InstanceComponent:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: InstanceComponent) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
