from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.plan_shard import PlanShard
  from ..models.planned_move import PlannedMove





T = TypeVar("T", bound="BalancerPlan")



@_attrs_define
class BalancerPlan:
    """ What the balancer would do now, and why.

        Attributes:
            since (str): The span's start, RFC 3339.
            until (str): Its end, RFC 3339 (the end of the last closed window).
            mean_statement_ms_per_s (float): The fleet's mean request load (ms/s).
            overfull_above_ms_per_s (float): Above this a shard is overfull: the mean plus `balancer.threshold`, and at
                least
                `balancer.min_load_ms_per_s` more (ms/s).
            hottest_excess_ms_per_s (float): The hottest shard's load above the mean (ms/s).
            shards (list[PlanShard]): Every registered shard, in the map's order.
            reason (str): Why: the move and its predicted effect, or why none (`balanced: ...`, `... is claimed by
                job ...`, `... cools down ...`, `... its breaker is open`, `no move improves ...`).
            move (None | PlannedMove | Unset):
     """

    since: str
    until: str
    mean_statement_ms_per_s: float
    overfull_above_ms_per_s: float
    hottest_excess_ms_per_s: float
    shards: list[PlanShard]
    reason: str
    move: None | PlannedMove | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.plan_shard import PlanShard # noqa: PLC0415
        from ..models.planned_move import PlannedMove # noqa: PLC0415
        since = self.since

        until = self.until

        mean_statement_ms_per_s = self.mean_statement_ms_per_s

        overfull_above_ms_per_s = self.overfull_above_ms_per_s

        hottest_excess_ms_per_s = self.hottest_excess_ms_per_s

        shards = []
        for shards_item_data in self.shards:
            shards_item = shards_item_data.to_dict()
            shards.append(shards_item)



        reason = self.reason

        move: dict[str, Any] | None | Unset
        if isinstance(self.move, Unset):
            move = UNSET
        elif isinstance(self.move, PlannedMove):
            move = self.move.to_dict()
        else:
            move = self.move


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "since": since,
            "until": until,
            "mean_statement_ms_per_s": mean_statement_ms_per_s,
            "overfull_above_ms_per_s": overfull_above_ms_per_s,
            "hottest_excess_ms_per_s": hottest_excess_ms_per_s,
            "shards": shards,
            "reason": reason,
        })
        if move is not UNSET:
            field_dict["move"] = move

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.plan_shard import PlanShard # noqa: PLC0415
        from ..models.planned_move import PlannedMove # noqa: PLC0415
        d = dict(src_dict)
        since = d.pop("since")

        until = d.pop("until")

        mean_statement_ms_per_s = d.pop("mean_statement_ms_per_s")

        overfull_above_ms_per_s = d.pop("overfull_above_ms_per_s")

        hottest_excess_ms_per_s = d.pop("hottest_excess_ms_per_s")

        shards = []
        _shards = d.pop("shards")
        for shards_item_data in (_shards):
            shards_item = PlanShard.from_dict(shards_item_data)



            shards.append(shards_item)


        reason = d.pop("reason")

        def _parse_move(data: object) -> None | PlannedMove | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                move_type_1 = PlannedMove.from_dict(data)



                return move_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PlannedMove | Unset, data)

        move = _parse_move(d.pop("move", UNSET))


        balancer_plan = cls(
            since=since,
            until=until,
            mean_statement_ms_per_s=mean_statement_ms_per_s,
            overfull_above_ms_per_s=overfull_above_ms_per_s,
            hottest_excess_ms_per_s=hottest_excess_ms_per_s,
            shards=shards,
            reason=reason,
            move=move,
        )


        balancer_plan.additional_properties = d
        return balancer_plan

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
