from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.balancer_mode import BalancerMode
from ..models.proposal_state import ProposalState
from ..models.run_outcome import RunOutcome
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.plan_shard import PlanShard
  from ..models.planned_move import PlannedMove





T = TypeVar("T", bound="BalancerRun")



@_attrs_define
class BalancerRun:
    """ One run of the balancer: its inputs, its decision and what came of it.

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
            id (int): Its id (a proposal's id).
            at (str): When it ran, RFC 3339.
            instance (str): The instance that ran it.
            mode (BalancerMode): The balancer's mode.
            outcome (RunOutcome): What came of a run.
            move (None | PlannedMove | Unset):
            proposal (None | ProposalState | Unset):
            settled (None | str | Unset): Why the proposal was settled as it was.
            settled_at (None | str | Unset): When, RFC 3339.
            job (None | str | Unset): The move job it (or the approval of its proposal) started: `/v1/admin/jobs/{id}`.
     """

    since: str
    until: str
    mean_statement_ms_per_s: float
    overfull_above_ms_per_s: float
    hottest_excess_ms_per_s: float
    shards: list[PlanShard]
    reason: str
    id: int
    at: str
    instance: str
    mode: BalancerMode
    outcome: RunOutcome
    move: None | PlannedMove | Unset = UNSET
    proposal: None | ProposalState | Unset = UNSET
    settled: None | str | Unset = UNSET
    settled_at: None | str | Unset = UNSET
    job: None | str | Unset = UNSET
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

        id = self.id

        at = self.at

        instance = self.instance

        mode = self.mode.value

        outcome = self.outcome.value

        move: dict[str, Any] | None | Unset
        if isinstance(self.move, Unset):
            move = UNSET
        elif isinstance(self.move, PlannedMove):
            move = self.move.to_dict()
        else:
            move = self.move

        proposal: None | str | Unset
        if isinstance(self.proposal, Unset):
            proposal = UNSET
        elif isinstance(self.proposal, ProposalState):
            proposal = self.proposal.value
        else:
            proposal = self.proposal

        settled: None | str | Unset
        if isinstance(self.settled, Unset):
            settled = UNSET
        else:
            settled = self.settled

        settled_at: None | str | Unset
        if isinstance(self.settled_at, Unset):
            settled_at = UNSET
        else:
            settled_at = self.settled_at

        job: None | str | Unset
        if isinstance(self.job, Unset):
            job = UNSET
        else:
            job = self.job


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
            "id": id,
            "at": at,
            "instance": instance,
            "mode": mode,
            "outcome": outcome,
        })
        if move is not UNSET:
            field_dict["move"] = move
        if proposal is not UNSET:
            field_dict["proposal"] = proposal
        if settled is not UNSET:
            field_dict["settled"] = settled
        if settled_at is not UNSET:
            field_dict["settled_at"] = settled_at
        if job is not UNSET:
            field_dict["job"] = job

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

        id = d.pop("id")

        at = d.pop("at")

        instance = d.pop("instance")

        mode = BalancerMode(d.pop("mode"))




        outcome = RunOutcome(d.pop("outcome"))




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


        def _parse_proposal(data: object) -> None | ProposalState | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                proposal_type_1 = ProposalState(data)



                return proposal_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ProposalState | Unset, data)

        proposal = _parse_proposal(d.pop("proposal", UNSET))


        def _parse_settled(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        settled = _parse_settled(d.pop("settled", UNSET))


        def _parse_settled_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        settled_at = _parse_settled_at(d.pop("settled_at", UNSET))


        def _parse_job(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        job = _parse_job(d.pop("job", UNSET))


        balancer_run = cls(
            since=since,
            until=until,
            mean_statement_ms_per_s=mean_statement_ms_per_s,
            overfull_above_ms_per_s=overfull_above_ms_per_s,
            hottest_excess_ms_per_s=hottest_excess_ms_per_s,
            shards=shards,
            reason=reason,
            id=id,
            at=at,
            instance=instance,
            mode=mode,
            outcome=outcome,
            move=move,
            proposal=proposal,
            settled=settled,
            settled_at=settled_at,
            job=job,
        )


        balancer_run.additional_properties = d
        return balancer_run

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
