from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="PlanShard")



@_attrs_define
class PlanShard:
    """ A shard as the plan saw it.

        Attributes:
            shard (str): The shard.
            statement_ms_per_s (float): Its request load: statement time per second (ms/s) over the span.
            hot_share (float): The share of the span (0 to 1) it was overfull for, step by step: it sends only if that is
                at least `balancer.sustained`.
            held (None | str | Unset): Why it may neither send nor receive now (`it is draining`, `its breaker is open`,
                ...);
                `null` when it may.
     """

    shard: str
    statement_ms_per_s: float
    hot_share: float
    held: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        shard = self.shard

        statement_ms_per_s = self.statement_ms_per_s

        hot_share = self.hot_share

        held: None | str | Unset
        if isinstance(self.held, Unset):
            held = UNSET
        else:
            held = self.held


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "shard": shard,
            "statement_ms_per_s": statement_ms_per_s,
            "hot_share": hot_share,
        })
        if held is not UNSET:
            field_dict["held"] = held

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        shard = d.pop("shard")

        statement_ms_per_s = d.pop("statement_ms_per_s")

        hot_share = d.pop("hot_share")

        def _parse_held(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        held = _parse_held(d.pop("held", UNSET))


        plan_shard = cls(
            shard=shard,
            statement_ms_per_s=statement_ms_per_s,
            hot_share=hot_share,
            held=held,
        )


        plan_shard.additional_properties = d
        return plan_shard

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
