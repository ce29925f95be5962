from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.balancer_mode import BalancerMode






T = TypeVar("T", bound="BalancerSettings")



@_attrs_define
class BalancerSettings:
    """ The balancer's settings (`[balancer]`).

        Attributes:
            configured_mode (BalancerMode): The balancer's mode.
            interval_s (float): How often it runs (s).
            window_s (float): The span the load is averaged over (s).
            cooldown_s (float): How long a moved vshard or tenant stays put (s).
            max_concurrent_moves (int): The most of its moves running at once.
            threshold (float): How far above the mean a shard may be before it is overfull (0.1: 10%).
            min_load_ms_per_s (float): ... and at least this far (ms/s).
            min_improvement (float): The share of the hottest excess a move must remove.
            tenant_share (float): A tenant carrying more than this share of its shard moves alone.
            sustained (float): The share of the window a shard must have been overfull for to send anything.
     """

    configured_mode: BalancerMode
    interval_s: float
    window_s: float
    cooldown_s: float
    max_concurrent_moves: int
    threshold: float
    min_load_ms_per_s: float
    min_improvement: float
    tenant_share: float
    sustained: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        configured_mode = self.configured_mode.value

        interval_s = self.interval_s

        window_s = self.window_s

        cooldown_s = self.cooldown_s

        max_concurrent_moves = self.max_concurrent_moves

        threshold = self.threshold

        min_load_ms_per_s = self.min_load_ms_per_s

        min_improvement = self.min_improvement

        tenant_share = self.tenant_share

        sustained = self.sustained


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "configured_mode": configured_mode,
            "interval_s": interval_s,
            "window_s": window_s,
            "cooldown_s": cooldown_s,
            "max_concurrent_moves": max_concurrent_moves,
            "threshold": threshold,
            "min_load_ms_per_s": min_load_ms_per_s,
            "min_improvement": min_improvement,
            "tenant_share": tenant_share,
            "sustained": sustained,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        configured_mode = BalancerMode(d.pop("configured_mode"))




        interval_s = d.pop("interval_s")

        window_s = d.pop("window_s")

        cooldown_s = d.pop("cooldown_s")

        max_concurrent_moves = d.pop("max_concurrent_moves")

        threshold = d.pop("threshold")

        min_load_ms_per_s = d.pop("min_load_ms_per_s")

        min_improvement = d.pop("min_improvement")

        tenant_share = d.pop("tenant_share")

        sustained = d.pop("sustained")

        balancer_settings = cls(
            configured_mode=configured_mode,
            interval_s=interval_s,
            window_s=window_s,
            cooldown_s=cooldown_s,
            max_concurrent_moves=max_concurrent_moves,
            threshold=threshold,
            min_load_ms_per_s=min_load_ms_per_s,
            min_improvement=min_improvement,
            tenant_share=tenant_share,
            sustained=sustained,
        )


        balancer_settings.additional_properties = d
        return balancer_settings

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
