from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="IndexFailure")



@_attrs_define
class IndexFailure:
    """ Why an index's build failed. Fix the records, then PUT the same definition again to build
    it again (or delete the index).

        Attributes:
            reason (str): What went wrong: records with values too long to index, records sharing a value of a
                unique index, or the error that stopped the backfill.
            offending_keys (list[str]): Keys of records that broke the build, at most 10 (for a shared unique value, the
                records
                on both sides).
     """

    reason: str
    offending_keys: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        reason = self.reason

        offending_keys = self.offending_keys




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "reason": reason,
            "offending_keys": offending_keys,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        reason = d.pop("reason")

        offending_keys = cast(list[str], d.pop("offending_keys"))


        index_failure = cls(
            reason=reason,
            offending_keys=offending_keys,
        )


        index_failure.additional_properties = d
        return index_failure

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
