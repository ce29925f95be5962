from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="RateLimit")



@_attrs_define
class RateLimit:
    """ A rate limit: `per_second` requests per second on average, up to `burst` at once.

        Attributes:
            per_second (int): Sustained requests per second (at least 1).
            burst (int): Requests admitted at once after a quiet period (at least 1).
     """

    per_second: int
    burst: int





    def to_dict(self) -> dict[str, Any]:
        per_second = self.per_second

        burst = self.burst


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "per_second": per_second,
            "burst": burst,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        per_second = d.pop("per_second")

        burst = d.pop("burst")

        rate_limit = cls(
            per_second=per_second,
            burst=burst,
        )

        return rate_limit

