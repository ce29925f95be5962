from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.job import Job
  from ..models.rebalance_plan import RebalancePlan





T = TypeVar("T", bound="RebalanceAnswer")



@_attrs_define
class RebalanceAnswer:
    """ The answer to a rebalance or drain: the plan, and the job carrying it out.

        Attributes:
            plan (RebalancePlan): What a rebalance or drain moves.
            job (Job | None | Unset):
     """

    plan: RebalancePlan
    job: Job | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.job import Job # noqa: PLC0415
        from ..models.rebalance_plan import RebalancePlan # noqa: PLC0415
        plan = self.plan.to_dict()

        job: dict[str, Any] | None | Unset
        if isinstance(self.job, Unset):
            job = UNSET
        elif isinstance(self.job, Job):
            job = self.job.to_dict()
        else:
            job = self.job


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "plan": plan,
        })
        if job is not UNSET:
            field_dict["job"] = job

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.job import Job # noqa: PLC0415
        from ..models.rebalance_plan import RebalancePlan # noqa: PLC0415
        d = dict(src_dict)
        plan = RebalancePlan.from_dict(d.pop("plan"))




        def _parse_job(data: object) -> Job | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                job_type_1 = Job.from_dict(data)



                return job_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Job | None | Unset, data)

        job = _parse_job(d.pop("job", UNSET))


        rebalance_answer = cls(
            plan=plan,
            job=job,
        )


        rebalance_answer.additional_properties = d
        return rebalance_answer

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
