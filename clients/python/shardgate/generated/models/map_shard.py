from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.map_shard_state import MapShardState






T = TypeVar("T", bound="MapShard")



@_attrs_define
class MapShard:
    """ One shard in the map.

        Attributes:
            id (str): Shard id.
            state (MapShardState): State.
            vshards (int): vshards it owns.
     """

    id: str
    state: MapShardState
    vshards: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        state = self.state.value

        vshards = self.vshards


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "state": state,
            "vshards": vshards,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        state = MapShardState(d.pop("state"))




        vshards = d.pop("vshards")

        map_shard = cls(
            id=id,
            state=state,
            vshards=vshards,
        )


        map_shard.additional_properties = d
        return map_shard

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
