from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="Connections")



@_attrs_define
class Connections:
    """ A shard database's connection pool, as one instance sees it. Pools open connections when
    statements need them and close them when idle, up to `max` (`storage.pool.max_connections`,
    shared among the shards of one PostgreSQL server, at most 4 for SQLite).

        Attributes:
            open_ (int): Connections open (in use or idle).
            idle (int): Connections open and idle; `open - idle` are in use.
            max_ (int): The most connections the pool opens.
     """

    open_: int
    idle: int
    max_: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        open_ = self.open_

        idle = self.idle

        max_ = self.max_


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "open": open_,
            "idle": idle,
            "max": max_,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        open_ = d.pop("open")

        idle = d.pop("idle")

        max_ = d.pop("max")

        connections = cls(
            open_=open_,
            idle=idle,
            max_=max_,
        )


        connections.additional_properties = d
        return connections

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
