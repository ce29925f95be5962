from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.instance_state import InstanceState
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.instance_components import InstanceComponents
  from ..models.instance_key_sets import InstanceKeySets





T = TypeVar("T", bound="Instance")



@_attrs_define
class Instance:
    """ A gateway instance.

        Attributes:
            id (str): Its name, as its leases and load windows carry it.
            state (InstanceState): Whether an instance serves.
            version (str): The version it runs.
            started_at (str): When it started, RFC 3339.
            address (str): The address it advertises (`instances.advertised_address`, or the one it listens on).
            last_seen_at (str): When it last reported, RFC 3339.
            report_interval_ms (int): How often it reports (ms).
            ready (bool): Whether its `/readyz` said `ready` when it last reported.
            components (InstanceComponents): Each component's readiness when it last reported: `catalog`, `cache`,
                `rate_limits` and
                one entry per shard.
            key_sets (InstanceKeySets): Each fetched key set by issuer, when it last reported; empty when it fetches none.
            balancer_lease (bool): Whether it holds the balancer's lease (it runs the balancer).
            job_leases (list[str]): The running jobs whose lease it holds (it runs them).
            stopped_at (None | str | Unset): When it stopped cleanly, RFC 3339; absent unless it did.
     """

    id: str
    state: InstanceState
    version: str
    started_at: str
    address: str
    last_seen_at: str
    report_interval_ms: int
    ready: bool
    components: InstanceComponents
    key_sets: InstanceKeySets
    balancer_lease: bool
    job_leases: list[str]
    stopped_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.instance_components import InstanceComponents # noqa: PLC0415
        from ..models.instance_key_sets import InstanceKeySets # noqa: PLC0415
        id = self.id

        state = self.state.value

        version = self.version

        started_at = self.started_at

        address = self.address

        last_seen_at = self.last_seen_at

        report_interval_ms = self.report_interval_ms

        ready = self.ready

        components = self.components.to_dict()

        key_sets = self.key_sets.to_dict()

        balancer_lease = self.balancer_lease

        job_leases = self.job_leases



        stopped_at: None | str | Unset
        if isinstance(self.stopped_at, Unset):
            stopped_at = UNSET
        else:
            stopped_at = self.stopped_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "state": state,
            "version": version,
            "started_at": started_at,
            "address": address,
            "last_seen_at": last_seen_at,
            "report_interval_ms": report_interval_ms,
            "ready": ready,
            "components": components,
            "key_sets": key_sets,
            "balancer_lease": balancer_lease,
            "job_leases": job_leases,
        })
        if stopped_at is not UNSET:
            field_dict["stopped_at"] = stopped_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.instance_components import InstanceComponents # noqa: PLC0415
        from ..models.instance_key_sets import InstanceKeySets # noqa: PLC0415
        d = dict(src_dict)
        id = d.pop("id")

        state = InstanceState(d.pop("state"))




        version = d.pop("version")

        started_at = d.pop("started_at")

        address = d.pop("address")

        last_seen_at = d.pop("last_seen_at")

        report_interval_ms = d.pop("report_interval_ms")

        ready = d.pop("ready")

        components = InstanceComponents.from_dict(d.pop("components"))




        key_sets = InstanceKeySets.from_dict(d.pop("key_sets"))




        balancer_lease = d.pop("balancer_lease")

        job_leases = cast(list[str], d.pop("job_leases"))


        def _parse_stopped_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stopped_at = _parse_stopped_at(d.pop("stopped_at", UNSET))


        instance = cls(
            id=id,
            state=state,
            version=version,
            started_at=started_at,
            address=address,
            last_seen_at=last_seen_at,
            report_interval_ms=report_interval_ms,
            ready=ready,
            components=components,
            key_sets=key_sets,
            balancer_lease=balancer_lease,
            job_leases=job_leases,
            stopped_at=stopped_at,
        )


        instance.additional_properties = d
        return instance

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
