from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.job_lease_holder_kind import JobLeaseHolderKind






T = TypeVar("T", bound="JobLeaseHolder")



@_attrs_define
class JobLeaseHolder:
    """ A running job and the instance running it.

        Attributes:
            job (str): The job (`GET /v1/admin/jobs/{id}`).
            kind (JobLeaseHolderKind): Its kind.
            target (str): What it works on.
            instance (str): The instance holding its lease.
            until (str): Until when, RFC 3339.
     """

    job: str
    kind: JobLeaseHolderKind
    target: str
    instance: str
    until: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        job = self.job

        kind = self.kind.value

        target = self.target

        instance = self.instance

        until = self.until


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "job": job,
            "kind": kind,
            "target": target,
            "instance": instance,
            "until": until,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        job = d.pop("job")

        kind = JobLeaseHolderKind(d.pop("kind"))




        target = d.pop("target")

        instance = d.pop("instance")

        until = d.pop("until")

        job_lease_holder = cls(
            job=job,
            kind=kind,
            target=target,
            instance=instance,
            until=until,
        )


        job_lease_holder.additional_properties = d
        return job_lease_holder

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
