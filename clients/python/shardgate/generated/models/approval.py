from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.balancer_run import BalancerRun
  from ..models.job import Job





T = TypeVar("T", bound="Approval")



@_attrs_define
class Approval:
    """ An approved proposal and the move it started.

        Attributes:
            proposal (BalancerRun): One run of the balancer: its inputs, its decision and what came of it.
            job (Job): A background job.
     """

    proposal: BalancerRun
    job: Job
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.balancer_run import BalancerRun # noqa: PLC0415
        from ..models.job import Job # noqa: PLC0415
        proposal = self.proposal.to_dict()

        job = self.job.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "proposal": proposal,
            "job": job,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.balancer_run import BalancerRun # noqa: PLC0415
        from ..models.job import Job # noqa: PLC0415
        d = dict(src_dict)
        proposal = BalancerRun.from_dict(d.pop("proposal"))




        job = Job.from_dict(d.pop("job"))




        approval = cls(
            proposal=proposal,
            job=job,
        )


        approval.additional_properties = d
        return approval

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
