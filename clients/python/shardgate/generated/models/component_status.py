from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ComponentStatus")



@_attrs_define
class ComponentStatus:
    """ One dependency's readiness.

        Attributes:
            status (str): `up`, `down`, `offline` (a shard an operator took offline), `degraded` (the catalog: it
                does not answer, this instance serves on the shard map it holds and admin changes get
                503 `catalog_unavailable`; the cache: Redis does not answer, reads go to the shards; rate
                limits: Redis does not answer, each instance limits alone), `local` (rate limits without
                Redis) or `disabled`. No component makes the instance not ready: a shard that is down fails
                only its own tenants' requests, and a catalog that is down only admin changes, on every
                instance alike, so taking this instance out of a load balancer would not help them and
                would hurt everybody else.
            latency_ms (int): How long the probe took, in milliseconds.
            error (None | str | Unset): Why it is down (no connection details).
            breaker (None | str | Unset): The database's circuit breaker on this instance (catalog and shards): `closed`,
                `open`,
                `half_open` or `forced_open`. While a shard's is not closed the shard is `down` without
                being probed; the catalog is always probed.
     """

    status: str
    latency_ms: int
    error: None | str | Unset = UNSET
    breaker: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        status = self.status

        latency_ms = self.latency_ms

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        breaker: None | str | Unset
        if isinstance(self.breaker, Unset):
            breaker = UNSET
        else:
            breaker = self.breaker


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "status": status,
            "latency_ms": latency_ms,
        })
        if error is not UNSET:
            field_dict["error"] = error
        if breaker is not UNSET:
            field_dict["breaker"] = breaker

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        status = d.pop("status")

        latency_ms = d.pop("latency_ms")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))


        def _parse_breaker(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        breaker = _parse_breaker(d.pop("breaker", UNSET))


        component_status = cls(
            status=status,
            latency_ms=latency_ms,
            error=error,
            breaker=breaker,
        )


        component_status.additional_properties = d
        return component_status

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
