from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="JobProgress")



@_attrs_define
class JobProgress:
    """ Progress. A backfill: `indexed` (entries written so far), `after` (the last record key
    done); one that met records the index cannot take also has `too_long` and `duplicates`
    (how many) and `offending_keys` (at most 10 of their keys). A tenant move: `phase`
    (`copy`, `catch_up`, `cut_over`, `cleanup`, `done` or `rolled_back`), `from`, `to`,
    `rows_to_copy` and `bytes_to_copy` (the rows the first copy takes and their bytes, blobs'
    and records', counted on the source before the job is recorded, so the answer that starts
    it has them, and again as the copy begins: with `rows_copied` and `bytes_copied`, a
    percentage and a rate; the catch-up passes copy more), `rows_copied` and `bytes_copied`
    (within a batch of the first copy too, stored at most every 250 ms), `passes`, `lag_rows`
    (how far the target is behind: 0 during the first copy, then the rows changed on the
    source since its snapshot, then the rows each catch-up pass took), `method`,
    `settled` and `checksums` (per table, source and target, and `matched`: the rows not
    changed since `settled_since`, compared before the fence, and the others), `fenced_at_ms`,
    `switched_at_ms` (set, with `epoch`, once the new placement is in force: the phase is
    `cleanup` from then on), `cutover_ms` (with `cutover_steps_ms`, where it went), `epoch`,
    `rolled_back` (why) and `pace` (the copy's: `adaptive`, `ceiling_bytes_per_second`,
    `bytes_per_second` now, `baseline_us`, each shard's request statement latency before the
    copy, and `changes`, the latest 120 changes as `[ms, bytes_per_second]`). A vshard move: the same, with `vshards`,
    `tenants` (the unpinned
    tenants they place, taken along) and `parent` (its rebalance). A range move: the same,
    with `range` (`collection`, `from`, `until`, `ranges_before`, `ranges_after`). A
    redistribution: `phase`, `collection`, `from` and `to` (each a `distribution` and its
    `ranges`), `sources` and `targets` (shards), `rows_to_copy` and `bytes_to_copy` (what
    its first pass takes, counted on the sources as it begins), `rows_copied`, `bytes_copied`, `passes`,
    `lag_rows`, `checksums` (the old and the new layout, counted and summed over their
    shards), `fenced_at_ms`, `switched_at_ms`, `cutover_ms`, `cutover_steps_ms`, `epoch`,
    `rolled_back` and `pace`. A rebalance: `balance`, `parallel`,
    `drain` (the shard drained, if any), the counts `pending`, `running`, `done` and `failed`,
    and `steps` (each with `vshards` or `tenant`, `from`, `to`, `state`, `job` and `error`).

     """

    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        
        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        job_progress = cls(
        )


        job_progress.additional_properties = d
        return job_progress

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
