from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.balancer_mode import BalancerMode
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.balancer_run import BalancerRun
  from ..models.balancer_settings import BalancerSettings





T = TypeVar("T", bound="BalancerView")



@_attrs_define
class BalancerView:
    """ The balancer: its mode, who runs it, its last runs and the pending proposals.

        Attributes:
            mode (BalancerMode): The balancer's mode.
            this_instance (str): The instance that answered.
            settings (BalancerSettings): The balancer's settings (`[balancer]`).
            proposals (list[BalancerRun]): The pending proposals, oldest first.
            runs (list[BalancerRun]): The last runs, newest first.
            mode_switched_by (None | str | Unset): Who switched it to that mode (`null`: it is the configured one).
            mode_switched_at (None | str | Unset): When, RFC 3339.
            runner (None | str | Unset): The instance running it (holding its lease), if any.
            lease_until (None | str | Unset): Until when its lease runs, RFC 3339.
     """

    mode: BalancerMode
    this_instance: str
    settings: BalancerSettings
    proposals: list[BalancerRun]
    runs: list[BalancerRun]
    mode_switched_by: None | str | Unset = UNSET
    mode_switched_at: None | str | Unset = UNSET
    runner: None | str | Unset = UNSET
    lease_until: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.balancer_run import BalancerRun # noqa: PLC0415
        from ..models.balancer_settings import BalancerSettings # noqa: PLC0415
        mode = self.mode.value

        this_instance = self.this_instance

        settings = self.settings.to_dict()

        proposals = []
        for proposals_item_data in self.proposals:
            proposals_item = proposals_item_data.to_dict()
            proposals.append(proposals_item)



        runs = []
        for runs_item_data in self.runs:
            runs_item = runs_item_data.to_dict()
            runs.append(runs_item)



        mode_switched_by: None | str | Unset
        if isinstance(self.mode_switched_by, Unset):
            mode_switched_by = UNSET
        else:
            mode_switched_by = self.mode_switched_by

        mode_switched_at: None | str | Unset
        if isinstance(self.mode_switched_at, Unset):
            mode_switched_at = UNSET
        else:
            mode_switched_at = self.mode_switched_at

        runner: None | str | Unset
        if isinstance(self.runner, Unset):
            runner = UNSET
        else:
            runner = self.runner

        lease_until: None | str | Unset
        if isinstance(self.lease_until, Unset):
            lease_until = UNSET
        else:
            lease_until = self.lease_until


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "mode": mode,
            "this_instance": this_instance,
            "settings": settings,
            "proposals": proposals,
            "runs": runs,
        })
        if mode_switched_by is not UNSET:
            field_dict["mode_switched_by"] = mode_switched_by
        if mode_switched_at is not UNSET:
            field_dict["mode_switched_at"] = mode_switched_at
        if runner is not UNSET:
            field_dict["runner"] = runner
        if lease_until is not UNSET:
            field_dict["lease_until"] = lease_until

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.balancer_run import BalancerRun # noqa: PLC0415
        from ..models.balancer_settings import BalancerSettings # noqa: PLC0415
        d = dict(src_dict)
        mode = BalancerMode(d.pop("mode"))




        this_instance = d.pop("this_instance")

        settings = BalancerSettings.from_dict(d.pop("settings"))




        proposals = []
        _proposals = d.pop("proposals")
        for proposals_item_data in (_proposals):
            proposals_item = BalancerRun.from_dict(proposals_item_data)



            proposals.append(proposals_item)


        runs = []
        _runs = d.pop("runs")
        for runs_item_data in (_runs):
            runs_item = BalancerRun.from_dict(runs_item_data)



            runs.append(runs_item)


        def _parse_mode_switched_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        mode_switched_by = _parse_mode_switched_by(d.pop("mode_switched_by", UNSET))


        def _parse_mode_switched_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        mode_switched_at = _parse_mode_switched_at(d.pop("mode_switched_at", UNSET))


        def _parse_runner(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        runner = _parse_runner(d.pop("runner", UNSET))


        def _parse_lease_until(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        lease_until = _parse_lease_until(d.pop("lease_until", UNSET))


        balancer_view = cls(
            mode=mode,
            this_instance=this_instance,
            settings=settings,
            proposals=proposals,
            runs=runs,
            mode_switched_by=mode_switched_by,
            mode_switched_at=mode_switched_at,
            runner=runner,
            lease_until=lease_until,
        )


        balancer_view.additional_properties = d
        return balancer_view

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
