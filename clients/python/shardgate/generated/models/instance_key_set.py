from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="InstanceKeySet")



@_attrs_define
class InstanceKeySet:
    """ One issuer's fetched key set on an instance.

        Attributes:
            status (str | Unset): `up`, `unavailable` or `expired` (see `/readyz`). Default: ''.
            url (str | Unset): Where its keys come from. Default: ''.
            age_secs (int | None | Unset): Seconds since the set in use was fetched, when the instance reported.
            last_error (None | str | Unset): Why its last fetch failed.
     """

    status: str | Unset = ''
    url: str | Unset = ''
    age_secs: int | None | Unset = UNSET
    last_error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        status = self.status

        url = self.url

        age_secs: int | None | Unset
        if isinstance(self.age_secs, Unset):
            age_secs = UNSET
        else:
            age_secs = self.age_secs

        last_error: None | str | Unset
        if isinstance(self.last_error, Unset):
            last_error = UNSET
        else:
            last_error = self.last_error


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
        })
        if status is not UNSET:
            field_dict["status"] = status
        if url is not UNSET:
            field_dict["url"] = url
        if age_secs is not UNSET:
            field_dict["age_secs"] = age_secs
        if last_error is not UNSET:
            field_dict["last_error"] = last_error

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        status = d.pop("status", UNSET)

        url = d.pop("url", UNSET)

        def _parse_age_secs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        age_secs = _parse_age_secs(d.pop("age_secs", UNSET))


        def _parse_last_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_error = _parse_last_error(d.pop("last_error", UNSET))


        instance_key_set = cls(
            status=status,
            url=url,
            age_secs=age_secs,
            last_error=last_error,
        )


        instance_key_set.additional_properties = d
        return instance_key_set

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
