from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="PredictedLoad")



@_attrs_define
class PredictedLoad:
    """ A shard's load as the plan predicts it after the move.

        Attributes:
            shard (str): The shard.
            statement_ms_per_s (float): Its predicted request load (ms/s).
     """

    shard: str
    statement_ms_per_s: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        shard = self.shard

        statement_ms_per_s = self.statement_ms_per_s


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "shard": shard,
            "statement_ms_per_s": statement_ms_per_s,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        shard = d.pop("shard")

        statement_ms_per_s = d.pop("statement_ms_per_s")

        predicted_load = cls(
            shard=shard,
            statement_ms_per_s=statement_ms_per_s,
        )


        predicted_load.additional_properties = d
        return predicted_load

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
