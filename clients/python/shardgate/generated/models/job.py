from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.job_kind import JobKind
from ..models.job_state import JobState
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.job_progress import JobProgress





T = TypeVar("T", bound="Job")



@_attrs_define
class Job:
    """ A background job.

        Attributes:
            id (str): Job id.
            kind (JobKind): `index.backfill`, `index.audit`, `tenant.move`, `vshard.move`, `range.move`,
                `collection.redistribute` or `vshards.rebalance`.
            target (str): What it works on (`tenant/collection/index`).
            state (JobState): `running`, `done`, `failed` or `cancelled`.
            progress (JobProgress): Progress. A backfill: `indexed` (entries written so far), `after` (the last record key
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
                copy, and `changes`, the latest 120 changes as `[ms, bytes_per_second]`). A vshard move: the same, with
                `vshards`, `tenants` (the unpinned
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
            created_at (str): Creation time, RFC 3339.
            updated_at (str): Last progress, RFC 3339.
            handovers (int): How many times another instance took the job over from one whose lease had run out
                (it crashed, was killed or lost the catalog). An instance that runs a job renews its
                lease while it works, so a job whose instance stays alive is never taken over.
            error (None | str | Unset): Why it failed.
     """

    id: str
    kind: JobKind
    target: str
    state: JobState
    progress: JobProgress
    created_at: str
    updated_at: str
    handovers: int
    error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.job_progress import JobProgress # noqa: PLC0415
        id = self.id

        kind = self.kind.value

        target = self.target

        state = self.state.value

        progress = self.progress.to_dict()

        created_at = self.created_at

        updated_at = self.updated_at

        handovers = self.handovers

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "kind": kind,
            "target": target,
            "state": state,
            "progress": progress,
            "created_at": created_at,
            "updated_at": updated_at,
            "handovers": handovers,
        })
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.job_progress import JobProgress # noqa: PLC0415
        d = dict(src_dict)
        id = d.pop("id")

        kind = JobKind(d.pop("kind"))




        target = d.pop("target")

        state = JobState(d.pop("state"))




        progress = JobProgress.from_dict(d.pop("progress"))




        created_at = d.pop("created_at")

        updated_at = d.pop("updated_at")

        handovers = d.pop("handovers")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))


        job = cls(
            id=id,
            kind=kind,
            target=target,
            state=state,
            progress=progress,
            created_at=created_at,
            updated_at=updated_at,
            handovers=handovers,
            error=error,
        )


        job.additional_properties = d
        return job

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
