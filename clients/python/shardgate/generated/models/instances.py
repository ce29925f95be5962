from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.instance import Instance
  from ..models.job_lease_holder import JobLeaseHolder
  from ..models.lease_holder import LeaseHolder





T = TypeVar("T", bound="Instances")



@_attrs_define
class Instances:
    """ The fleet's instances and who holds which lease.

        Attributes:
            instances (list[Instance]): Every instance that reported within `storage.load.retention` (the longest running
                first, serving ones before gone ones).
            job_leases (list[JobLeaseHolder]): Each running job's lease, oldest job first (a job whose lease ran out is not
                listed: the
                next instance to look takes it over).
            balancer_lease (LeaseHolder | None | Unset):
     """

    instances: list[Instance]
    job_leases: list[JobLeaseHolder]
    balancer_lease: LeaseHolder | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.instance import Instance # noqa: PLC0415
        from ..models.job_lease_holder import JobLeaseHolder # noqa: PLC0415
        from ..models.lease_holder import LeaseHolder # noqa: PLC0415
        instances = []
        for instances_item_data in self.instances:
            instances_item = instances_item_data.to_dict()
            instances.append(instances_item)



        job_leases = []
        for job_leases_item_data in self.job_leases:
            job_leases_item = job_leases_item_data.to_dict()
            job_leases.append(job_leases_item)



        balancer_lease: dict[str, Any] | None | Unset
        if isinstance(self.balancer_lease, Unset):
            balancer_lease = UNSET
        elif isinstance(self.balancer_lease, LeaseHolder):
            balancer_lease = self.balancer_lease.to_dict()
        else:
            balancer_lease = self.balancer_lease


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "instances": instances,
            "job_leases": job_leases,
        })
        if balancer_lease is not UNSET:
            field_dict["balancer_lease"] = balancer_lease

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.instance import Instance # noqa: PLC0415
        from ..models.job_lease_holder import JobLeaseHolder # noqa: PLC0415
        from ..models.lease_holder import LeaseHolder # noqa: PLC0415
        d = dict(src_dict)
        instances = []
        _instances = d.pop("instances")
        for instances_item_data in (_instances):
            instances_item = Instance.from_dict(instances_item_data)



            instances.append(instances_item)


        job_leases = []
        _job_leases = d.pop("job_leases")
        for job_leases_item_data in (_job_leases):
            job_leases_item = JobLeaseHolder.from_dict(job_leases_item_data)



            job_leases.append(job_leases_item)


        def _parse_balancer_lease(data: object) -> LeaseHolder | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                balancer_lease_type_1 = LeaseHolder.from_dict(data)



                return balancer_lease_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LeaseHolder | None | Unset, data)

        balancer_lease = _parse_balancer_lease(d.pop("balancer_lease", UNSET))


        instances = cls(
            instances=instances,
            job_leases=job_leases,
            balancer_lease=balancer_lease,
        )


        instances.additional_properties = d
        return instances

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
