from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="KeySetRefresh")



@_attrs_define
class KeySetRefresh:
    """ What a refresh did to one issuer's key set.

        Attributes:
            issuer (str): The issuer (`iss`).
            url (str): Where its keys come from (scheme, host and path only).
            refreshed (bool): Whether the fetch took a new set (now in use).
            error (None | str | Unset): Why it did not (the last good set, if any, stays in use); absent when it did.
            age_secs (int | None | Unset): Seconds since the set in use was fetched (0 right after a refresh); absent when
                there is none.
     """

    issuer: str
    url: str
    refreshed: bool
    error: None | str | Unset = UNSET
    age_secs: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        issuer = self.issuer

        url = self.url

        refreshed = self.refreshed

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        age_secs: int | None | Unset
        if isinstance(self.age_secs, Unset):
            age_secs = UNSET
        else:
            age_secs = self.age_secs


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "issuer": issuer,
            "url": url,
            "refreshed": refreshed,
        })
        if error is not UNSET:
            field_dict["error"] = error
        if age_secs is not UNSET:
            field_dict["age_secs"] = age_secs

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        issuer = d.pop("issuer")

        url = d.pop("url")

        refreshed = d.pop("refreshed")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))


        def _parse_age_secs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        age_secs = _parse_age_secs(d.pop("age_secs", UNSET))


        key_set_refresh = cls(
            issuer=issuer,
            url=url,
            refreshed=refreshed,
            error=error,
            age_secs=age_secs,
        )


        key_set_refresh.additional_properties = d
        return key_set_refresh

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
