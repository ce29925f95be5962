from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="InstanceComponent")



@_attrs_define
class InstanceComponent:
    """ One component's readiness on an instance, as its `/readyz` last computed it.

        Attributes:
            status (str | Unset): `up`, `down`, `offline`, `degraded`, `local` or `disabled` (see `/readyz`). Default: ''.
            latency_ms (int | Unset): How long its probe took (ms). Default: 0.
            error (None | str | Unset): Why it is down.
            breaker (None | str | Unset): The database's circuit breaker on that instance (catalog and shards).
     """

    status: str | Unset = ''
    latency_ms: int | Unset = 0
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
        })
        if status is not UNSET:
            field_dict["status"] = status
        if latency_ms is not UNSET:
            field_dict["latency_ms"] = latency_ms
        if error is not UNSET:
            field_dict["error"] = error
        if breaker is not UNSET:
            field_dict["breaker"] = breaker

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        status = d.pop("status", UNSET)

        latency_ms = d.pop("latency_ms", UNSET)

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


        instance_component = cls(
            status=status,
            latency_ms=latency_ms,
            error=error,
            breaker=breaker,
        )


        instance_component.additional_properties = d
        return instance_component

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
