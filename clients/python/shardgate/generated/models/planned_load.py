from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.planned_load_state import PlannedLoadState






T = TypeVar("T", bound="PlannedLoad")



@_attrs_define
class PlannedLoad:
    """ One shard's load before and after a plan.

        Attributes:
            shard (str): The shard.
            state (PlannedLoadState): Its state (`active` shards receive, `draining` ones give everything away, `read_only`
                and `offline` ones keep what they have). Example: active.
            before (int): Its load now: vshards owned (by count) or bytes stored (by bytes).
            after (int): Its load after the plan, in the same unit.
     """

    shard: str
    state: PlannedLoadState
    before: int
    after: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        shard = self.shard

        state = self.state.value

        before = self.before

        after = self.after


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "shard": shard,
            "state": state,
            "before": before,
            "after": after,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        shard = d.pop("shard")

        state = PlannedLoadState(d.pop("state"))




        before = d.pop("before")

        after = d.pop("after")

        planned_load = cls(
            shard=shard,
            state=state,
            before=before,
            after=after,
        )


        planned_load.additional_properties = d
        return planned_load

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
