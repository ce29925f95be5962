from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="RequestHealthStep")



@_attrs_define
class RequestHealthStep:
    """ A step of a series.

        Attributes:
            requests (int): Requests answered.
            errors (int): Of them, errors: 5xx and 429 (clients' other 4xx are not errors).
            rate_per_s (float): Requests per second.
            error_rate (float): Errors per request (0 to 1); 0 without requests.
            start (str): The step's start, RFC 3339.
            p50_ms (float | None | Unset): The median latency (ms), from the merged histogram; `null` without requests.
            p99_ms (float | None | Unset): The 99th percentile of latency (ms); `null` without requests.
     """

    requests: int
    errors: int
    rate_per_s: float
    error_rate: float
    start: str
    p50_ms: float | None | Unset = UNSET
    p99_ms: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        requests = self.requests

        errors = self.errors

        rate_per_s = self.rate_per_s

        error_rate = self.error_rate

        start = self.start

        p50_ms: float | None | Unset
        if isinstance(self.p50_ms, Unset):
            p50_ms = UNSET
        else:
            p50_ms = self.p50_ms

        p99_ms: float | None | Unset
        if isinstance(self.p99_ms, Unset):
            p99_ms = UNSET
        else:
            p99_ms = self.p99_ms


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "requests": requests,
            "errors": errors,
            "rate_per_s": rate_per_s,
            "error_rate": error_rate,
            "start": start,
        })
        if p50_ms is not UNSET:
            field_dict["p50_ms"] = p50_ms
        if p99_ms is not UNSET:
            field_dict["p99_ms"] = p99_ms

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        requests = d.pop("requests")

        errors = d.pop("errors")

        rate_per_s = d.pop("rate_per_s")

        error_rate = d.pop("error_rate")

        start = d.pop("start")

        def _parse_p50_ms(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        p50_ms = _parse_p50_ms(d.pop("p50_ms", UNSET))


        def _parse_p99_ms(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        p99_ms = _parse_p99_ms(d.pop("p99_ms", UNSET))


        request_health_step = cls(
            requests=requests,
            errors=errors,
            rate_per_s=rate_per_s,
            error_rate=error_rate,
            start=start,
            p50_ms=p50_ms,
            p99_ms=p99_ms,
        )


        request_health_step.additional_properties = d
        return request_health_step

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
